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
  void assignClasses();
  std::vector<int32_t> buildTrie();
  void linkFailures(std::vector<int32_t>& edge);
  // The automaton runs over byte classes: every byte no keyword contains is class 0, and each
  // letter shares its class with its upper case. A row is `classes_` wide, so the table stays
  // small enough for the cache however many rules there are.
  static constexpr uint32_t kOutputBit = 0x80000000u;  // the state reached reports tags
  std::vector<std::string> keywords_;                  // lower-cased, until build()
  std::vector<int> keyword_tags_;
  uint8_t class_of_[256] = {};
  uint32_t classes_ = 1;
  std::vector<uint32_t> next_;             // row offset + class -> row offset | kOutputBit
  std::vector<std::vector<int>> outputs_;  // by state: tags reported on reaching it
  bool built_ = false;
  mutable std::vector<uint32_t> seen_;  // tag -> generation of the last report
  mutable uint32_t generation_ = 0;
  int max_tag_ = -1;
};

}  // namespace ccscope::diagnostics
