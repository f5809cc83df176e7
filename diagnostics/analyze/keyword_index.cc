#include "diagnostics/analyze/keyword_index.h"

#include <algorithm>
#include <cctype>
#include <deque>

#include "core/check.h"

namespace ccscope::diagnostics {
namespace {
unsigned char lower(unsigned char c) { return static_cast<unsigned char>(std::tolower(c)); }
}  // namespace

void KeywordIndex::add(std::string_view keyword, int tag) {
  CCSCOPE_CHECK(!built_, "KeywordIndex::add after build");
  if (keyword.empty() || tag < 0) return;
  std::string k(keyword);
  for (char& ch : k) ch = static_cast<char>(lower(static_cast<unsigned char>(ch)));
  keywords_.push_back(std::move(k));
  keyword_tags_.push_back(tag);
  max_tag_ = std::max(max_tag_, tag);
}

// Classes are numbered in order of first appearance in the keywords; class 0 is every other
// byte.
void KeywordIndex::assignClasses() {
  for (const auto& k : keywords_) {
    for (char ch : k) {
      const auto c = static_cast<unsigned char>(ch);
      if (class_of_[c] == 0) class_of_[c] = static_cast<uint8_t>(classes_++);
    }
  }
  CCSCOPE_CHECK(classes_ <= 256, "more byte classes than bytes");
  for (int c = 'A'; c <= 'Z'; ++c) class_of_[c] = class_of_[c - 'A' + 'a'];
}

// The trie, in states; -1 marks an edge the failure links fill in.
std::vector<int32_t> KeywordIndex::buildTrie() {
  std::vector<int32_t> edge;
  auto add_state = [&] {
    edge.resize(edge.size() + classes_, -1);
    outputs_.emplace_back();
    return static_cast<int32_t>(outputs_.size()) - 1;
  };
  add_state();
  for (size_t i = 0; i < keywords_.size(); ++i) {
    int32_t s = 0;
    for (char ch : keywords_[i]) {
      const size_t slot = static_cast<size_t>(s) * classes_ + class_of_[static_cast<uint8_t>(ch)];
      if (edge[slot] < 0) {
        const int32_t created = add_state();
        edge[slot] = created;  // edge may have moved: index again
      }
      s = edge[slot];
    }
    outputs_[static_cast<size_t>(s)].push_back(keyword_tags_[i]);
  }
  return edge;
}

// Breadth-first failure links turn the trie into a DFA; each state inherits its failure
// state's tags.
void KeywordIndex::linkFailures(std::vector<int32_t>& edge) {
  std::vector<int32_t> fail(outputs_.size(), 0);
  std::deque<int32_t> queue;
  for (uint32_t c = 0; c < classes_; ++c) {
    if (edge[c] < 0) {
      edge[c] = 0;
    } else {
      queue.push_back(edge[c]);
    }
  }
  while (!queue.empty()) {
    const auto s = static_cast<size_t>(queue.front());
    queue.pop_front();
    const auto f = static_cast<size_t>(fail[s]);
    outputs_[s].insert(outputs_[s].end(), outputs_[f].begin(), outputs_[f].end());
    for (uint32_t c = 0; c < classes_; ++c) {
      const size_t slot = s * classes_ + c;
      const int32_t via_fail = edge[f * classes_ + c];
      if (edge[slot] < 0) {
        edge[slot] = via_fail;
      } else {
        fail[static_cast<size_t>(edge[slot])] = via_fail;
        queue.push_back(edge[slot]);
      }
    }
  }
}

void KeywordIndex::build() {
  CCSCOPE_CHECK(!built_, "KeywordIndex::build twice");
  assignClasses();
  std::vector<int32_t> edge = buildTrie();
  linkFailures(edge);
  CCSCOPE_CHECK(edge.size() < kOutputBit, "keyword automaton too large");
  next_.resize(edge.size());
  for (size_t i = 0; i < edge.size(); ++i) {
    const auto t = static_cast<uint32_t>(edge[i]);
    next_[i] = t * classes_ | (outputs_[t].empty() ? 0 : kOutputBit);
  }
  std::vector<std::string>().swap(keywords_);
  std::vector<int>().swap(keyword_tags_);
  seen_.assign(static_cast<size_t>(max_tag_) + 1, 0);
  built_ = true;
}

void KeywordIndex::find(std::string_view text, std::vector<int>& tags) const {
  CCSCOPE_CHECK(built_, "KeywordIndex::find before build");
  if (++generation_ == 0) {
    std::fill(seen_.begin(), seen_.end(), 0);
    generation_ = 1;
  }
  const uint32_t* table = next_.data();
  uint32_t row = 0;
  for (char ch : text) {
    const uint32_t to = table[row + class_of_[static_cast<unsigned char>(ch)]];
    row = to & ~kOutputBit;
    if (to & kOutputBit) {
      for (int tag : outputs_[row / classes_]) {
        if (seen_[static_cast<size_t>(tag)] != generation_) {
          seen_[static_cast<size_t>(tag)] = generation_;
          tags.push_back(tag);
        }
      }
    }
  }
}

}  // namespace ccscope::diagnostics
