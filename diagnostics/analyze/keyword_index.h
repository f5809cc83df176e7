// KeywordIndex: finds which of many literal keywords occur in a line, case-insensitively, in one
// pass (an Aho-Corasick automaton compiled to a dense DFA). Rules name keywords so that the
// expensive regular expressions only run on the few lines that can match them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ccscope::diagnostics {

class KeywordIndex {
 public:
  // Adds a keyword that reports `tag` when found. Empty keywords are ignored.
  void add(std::string_view keyword, int tag);
  // Builds the automaton; call once after the last add().
  void build();
  // Appends the tags of every keyword found in text (a tag once per call; order unspecified).
  void find(std::string_view text, std::vector<int>& tags) const;
  size_t stateCount() const { return outputs_.size(); }

 private:
  static constexpr int kAlphabet = 256;
  int addState();
  std::vector<int32_t> next_;              // state * kAlphabet + byte -> state
  std::vector<std::vector<int>> outputs_;  // tags reported on reaching a state
  std::vector<int32_t> fail_;
  bool built_ = false;
  mutable std::vector<uint32_t> seen_;  // tag -> generation of the last report
  mutable uint32_t generation_ = 0;
  int max_tag_ = -1;
};

}  // namespace ccscope::diagnostics
