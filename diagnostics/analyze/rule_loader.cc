#include "diagnostics/analyze/rule_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/toml.h"

namespace ccscope::diagnostics {
namespace {

constexpr int kMaxGroup = 9;

core::Status ruleError(const std::string& source, const std::string& id, const std::string& msg) {
  return core::Status(
      core::Code::kInvalidArgument,
      "rule file " + source + (id.empty() ? "" : " rule '" + id + "'") + ": " + msg);
}

// A string or an array of strings.
std::vector<std::string> stringsOf(const toml::table& t, const char* key) {
  std::vector<std::string> out;
  if (auto s = t[key].value<std::string>()) {
    out.push_back(*s);
  } else if (const auto* arr = t[key].as_array()) {
    for (const auto& v : *arr) {
      if (auto s2 = v.value<std::string>()) out.push_back(*s2);
    }
  }
  return out;
}

core::Result<Rule> ruleFromTable(const toml::table& t, const std::string& source) {
  Rule r;
  r.source = source;
  r.spec.id = t["id"].value_or(std::string());
  if (r.spec.id.empty()) return ruleError(source, "", "a rule has no id");
  auto layer = reports::parseLayer(t["layer"].value_or(std::string()));
  if (!layer.isOk()) return ruleError(source, r.spec.id, layer.status().message());
  r.spec.layer = *layer;
  auto kind = reports::parseFindingKind(t["kind"].value_or(std::string("root")));
  if (!kind.isOk()) return ruleError(source, r.spec.id, kind.status().message());
  r.spec.kind = *kind;
  r.spec.weight = std::clamp(static_cast<int>(t["weight"].value_or(int64_t{50})), 0, 100);
  r.spec.verdict = t["verdict"].value_or(std::string());
  r.spec.next_step = t["next_step"].value_or(std::string());
  r.keywords = stringsOf(t, "keywords");
  if (r.keywords.empty()) return ruleError(source, r.spec.id, "needs at least one keyword");
  r.pattern = t["regex"].value_or(std::string());
  if (r.pattern.empty()) return ruleError(source, r.spec.id, "needs a regex");
  const bool icase = t["icase"].value_or(false);
  try {
    auto flags = std::regex::ECMAScript | std::regex::optimize;
    if (icase) flags |= std::regex::icase;
    r.regex = std::make_shared<const std::regex>(r.pattern, flags);
  } catch (const std::regex_error& e) {
    return ruleError(source, r.spec.id, std::string("bad regex: ") + e.what());
  }
  r.peer_group = static_cast<int>(t["peer_group"].value_or(int64_t{0}));
  r.rank_group = static_cast<int>(t["rank_group"].value_or(int64_t{0}));
  r.other_rank_after = t["other_rank_after"].value_or(std::string());
  r.spec.names_failed_process = t["names_failed_process"].value_or(false);
  r.host_group = static_cast<int>(t["host_group"].value_or(int64_t{0}));
  r.layer_group = static_cast<int>(t["layer_group"].value_or(int64_t{0}));
  for (int g : {r.peer_group, r.rank_group, r.host_group, r.layer_group}) {
    if (g < 0 || g > kMaxGroup || static_cast<size_t>(g) > r.regex->mark_count()) {
      return ruleError(source, r.spec.id, "capture group number out of range");
    }
  }
  if (t.contains("opens") && !t["opens"].is_string()) {
    return ruleError(source, r.spec.id, "opens names one phase (a string)");
  }
  r.opens = t["opens"].value_or(std::string());
  r.closed_by_rank = static_cast<int>(t["closed_by_rank"].value_or(int64_t{-1}));
  r.closes = stringsOf(t, "closes");
  r.one_host = t["one_host"].value_or(false);
  if (r.one_host && r.opens.empty()) {
    return ruleError(source, r.spec.id, "one_host applies only to a rule that opens a phase");
  }
  r.errno_text = t["errno"].value_or(false);
  r.examples = stringsOf(t, "example");
  r.near_misses = stringsOf(t, "near_miss");
  return r;
}

void mergeRules(std::vector<Rule>& into, std::vector<Rule>&& more) {
  for (auto& r : more) {
    auto same = std::find_if(into.begin(), into.end(),
                             [&](const Rule& x) { return x.spec.id == r.spec.id; });
    if (same != into.end()) {
      *same = std::move(r);
    } else {
      into.push_back(std::move(r));
    }
  }
}

core::Result<std::vector<Rule>> loadDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return core::Status(core::Code::kInvalidArgument, "rules directory not found: '" + dir + "'");
  }
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".toml") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<Rule> rules;
  for (const auto& f : files) {
    std::ifstream in(f);
    if (!in) return core::Status(core::Code::kInvalidArgument, "cannot read rule file " + f);
    std::stringstream ss;
    ss << in.rdbuf();
    CCSCOPE_ASSIGN_OR_RETURN(auto parsed, parseRules(ss.str(), f));
    mergeRules(rules, std::move(parsed));
  }
  return rules;
}

}  // namespace

core::Result<std::vector<Rule>> parseRules(std::string_view toml_text, const std::string& source) {
  toml::table doc;
  try {
    doc = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << e.description() << " at line " << e.source().begin.line;
    return ruleError(source, "", msg.str());
  }
  std::vector<Rule> rules;
  const auto* arr = doc["rule"].as_array();
  if (arr == nullptr) return rules;
  for (const auto& node : *arr) {
    const auto* t = node.as_table();
    if (t == nullptr) return ruleError(source, "", "[[rule]] entries must be tables");
    CCSCOPE_ASSIGN_OR_RETURN(Rule r, ruleFromTable(*t, source));
    rules.push_back(std::move(r));
  }
  return rules;
}

core::Result<std::vector<Rule>> loadDefaultRules() {
  std::vector<Rule> rules;
  for (const auto& f : embeddedRuleFiles()) {
    CCSCOPE_ASSIGN_OR_RETURN(auto parsed, parseRules(f.text, std::string("<builtin>/") + f.name));
    mergeRules(rules, std::move(parsed));
  }
  return rules;
}

core::Result<std::vector<Rule>> loadRules(const std::vector<std::string>& rule_dirs) {
  CCSCOPE_ASSIGN_OR_RETURN(auto rules, loadDefaultRules());
  for (const auto& dir : rule_dirs) {
    CCSCOPE_ASSIGN_OR_RETURN(auto extra, loadDirectory(dir));
    mergeRules(rules, std::move(extra));
  }
  return rules;
}

}  // namespace ccscope::diagnostics
