// Loads rules from TOML text: the default set compiled into the binary (diagnostics/rules/*.toml,
// embedded at build time) and operator rule directories given with --rules. A later rule with
// the same id replaces an earlier one, so operators can override a default.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "diagnostics/analyze/rule.h"

namespace ccscope::diagnostics {

// Parses one TOML document of [[rule]] tables; `source` names it in error messages.
core::Result<std::vector<Rule>> parseRules(std::string_view toml_text, const std::string& source);

// The default rule set compiled into the binary.
core::Result<std::vector<Rule>> loadDefaultRules();

// Default rules plus every *.toml in each directory (sorted by name), overrides applied.
core::Result<std::vector<Rule>> loadRules(const std::vector<std::string>& rule_dirs);

// The embedded rule files as (name, text) pairs; generated at build time.
struct EmbeddedRuleFile {
  const char* name;
  const char* text;
};
const std::vector<EmbeddedRuleFile>& embeddedRuleFiles();

}  // namespace ccscope::diagnostics
