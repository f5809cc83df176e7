# Generates a C++ source holding the default rule files as string literals, so the ccscope
# binary finds its rules from any working directory. Invoked at build time:
#   cmake -DOUT=<file.cc> -DRULES="a.toml;b.toml" -P embed_rules.cmake
set(body "// Generated from diagnostics/rules/*.toml by embed_rules.cmake; do not edit.\n")
string(APPEND body "#include \"diagnostics/analyze/rule_loader.h\"\n\n")
string(APPEND body "namespace ccscope::diagnostics {\n\n")
string(APPEND body "const std::vector<EmbeddedRuleFile>& embeddedRuleFiles() {\n")
string(APPEND body "  static const std::vector<EmbeddedRuleFile> files = {\n")
foreach(rule_file IN LISTS RULES)
  file(READ ${rule_file} text)
  get_filename_component(name ${rule_file} NAME)
  string(APPEND body "    {\"${name}\", R\"ccscope_rules(${text})ccscope_rules\"},\n")
endforeach()
string(APPEND body "  };\n  return files;\n}\n\n}  // namespace ccscope::diagnostics\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
