// RuleMatcher: runs the whole rule set over one line. A single keyword pass (KeywordIndex)
// selects the candidate rules; only those run their regular expression, on at most
// kMaxRegexBytes of the line. The same pass reports "trigger" keywords that wake the
// structured parsers, so each line is scanned once.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/analyze/keyword_index.h"
#include "diagnostics/analyze/rule.h"

namespace ccscope::diagnostics {

inline constexpr size_t kMaxRegexBytes = 2048;
inline constexpr size_t kMaxGroups = 10;

struct RuleMatch {
  const Rule* rule = nullptr;
  std::array<std::string_view, kMaxGroups> groups;  // views into the scanned line
};

class RuleMatcher {
 public:
  RuleMatcher(std::vector<Rule> rules, const std::vector<std::string>& triggers);

  // Appends every rule that matches and the index of every trigger keyword found.
  void scan(std::string_view line, std::vector<RuleMatch>& matches,
            std::vector<int>& triggers) const;
  // Whether rule `index` alone matches (keywords and regex), for rule tests.
  bool ruleMatches(size_t index, std::string_view line) const;
  bool regexMatch(const Rule& rule, std::string_view line, RuleMatch* out) const;

  const std::vector<Rule>& rules() const { return rules_; }

 private:
  std::vector<Rule> rules_;
  KeywordIndex index_;
  size_t trigger_base_ = 0;
  mutable std::vector<int> tags_;
};

}  // namespace ccscope::diagnostics
