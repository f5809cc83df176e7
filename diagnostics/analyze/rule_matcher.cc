#include "diagnostics/analyze/rule_matcher.h"

#include <algorithm>
#include <cctype>

namespace ccscope::diagnostics {
namespace {

bool containsIgnoreCase(std::string_view text, std::string_view key) {
  auto it = std::search(text.begin(), text.end(), key.begin(), key.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  });
  return it != text.end();
}

}  // namespace

RuleMatcher::RuleMatcher(std::vector<Rule> rules, const std::vector<std::string>& triggers)
    : rules_(std::move(rules)), trigger_base_(rules_.size()) {
  for (size_t i = 0; i < rules_.size(); ++i) {
    for (const auto& k : rules_[i].keywords) index_.add(k, static_cast<int>(i));
  }
  for (size_t t = 0; t < triggers.size(); ++t) {
    index_.add(triggers[t], static_cast<int>(trigger_base_ + t));
  }
  index_.build();
}

bool RuleMatcher::regexMatch(const Rule& rule, std::string_view line, RuleMatch* out) const {
  const std::string_view capped = line.substr(0, kMaxRegexBytes);
  std::cmatch m;
  bool found = false;
  try {
    found = std::regex_search(capped.data(), capped.data() + capped.size(), m, *rule.regex);
  } catch (const std::regex_error&) {
    return false;  // complexity limits: treat as no match rather than fail the analysis
  }
  if (!found || out == nullptr) return found;
  out->rule = &rule;
  for (size_t g = 0; g < kMaxGroups; ++g) {
    out->groups[g] = g < m.size() && m[g].matched
                         ? std::string_view(m[g].first, static_cast<size_t>(m[g].length()))
                         : std::string_view();
  }
  return true;
}

void RuleMatcher::scan(std::string_view line, std::vector<RuleMatch>& matches,
                       std::vector<int>& triggers) const {
  tags_.clear();
  index_.find(line, tags_);
  if (tags_.empty()) return;
  std::sort(tags_.begin(), tags_.end());
  for (int tag : tags_) {
    const auto t = static_cast<size_t>(tag);
    if (t >= trigger_base_) {
      triggers.push_back(static_cast<int>(t - trigger_base_));
      continue;
    }
    RuleMatch m;
    if (regexMatch(rules_[t], line, &m)) matches.push_back(m);
  }
}

bool RuleMatcher::ruleMatches(size_t index, std::string_view line) const {
  const Rule& rule = rules_.at(index);
  const bool keyword =
      std::any_of(rule.keywords.begin(), rule.keywords.end(),
                  [&](const std::string& k) { return containsIgnoreCase(line, k); });
  return keyword && regexMatch(rule, line, nullptr);
}

}  // namespace ccscope::diagnostics
