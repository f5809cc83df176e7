#include "diagnostics/analyze/keyword_index.h"

#include <algorithm>
#include <cctype>
#include <deque>

#include "core/check.h"

namespace ccscope::diagnostics {
namespace {
unsigned char lower(unsigned char c) { return static_cast<unsigned char>(std::tolower(c)); }
}  // namespace

int KeywordIndex::addState() {
  next_.resize(next_.size() + kAlphabet, -1);
  outputs_.emplace_back();
  fail_.push_back(0);
  return static_cast<int>(outputs_.size()) - 1;
}

void KeywordIndex::add(std::string_view keyword, int tag) {
  CCSCOPE_CHECK(!built_, "KeywordIndex::add after build");
  if (keyword.empty() || tag < 0) return;
  if (outputs_.empty()) addState();
  int s = 0;
  for (char ch : keyword) {
    const unsigned char c = lower(static_cast<unsigned char>(ch));
    const size_t slot = static_cast<size_t>(s) * kAlphabet + c;
    if (next_[slot] < 0) {
      const int created = addState();
      next_[slot] = created;  // next_ may have moved: index again
    }
    s = next_[static_cast<size_t>(s) * kAlphabet + c];
  }
  outputs_[s].push_back(tag);
  max_tag_ = std::max(max_tag_, tag);
}

void KeywordIndex::build() {
  if (outputs_.empty()) addState();
  std::deque<int> queue;
  for (int c = 0; c < kAlphabet; ++c) {
    int& t = next_[c];
    if (t < 0) {
      t = 0;
    } else {
      fail_[t] = 0;
      queue.push_back(t);
    }
  }
  while (!queue.empty()) {
    const int s = queue.front();
    queue.pop_front();
    const auto& inherited = outputs_[fail_[s]];
    outputs_[s].insert(outputs_[s].end(), inherited.begin(), inherited.end());
    for (int c = 0; c < kAlphabet; ++c) {
      const size_t slot = static_cast<size_t>(s) * kAlphabet + c;
      const int via_fail = next_[static_cast<size_t>(fail_[s]) * kAlphabet + c];
      if (next_[slot] < 0) {
        next_[slot] = via_fail;
      } else {
        fail_[next_[slot]] = via_fail;
        queue.push_back(next_[slot]);
      }
    }
  }
  // Upper-case bytes follow the lower-case transitions: matching ignores ASCII case.
  for (size_t s = 0; s < outputs_.size(); ++s) {
    for (int c = 'A'; c <= 'Z'; ++c)
      next_[s * kAlphabet + c] = next_[s * kAlphabet + (c - 'A' + 'a')];
  }
  seen_.assign(static_cast<size_t>(max_tag_) + 1, 0);
  built_ = true;
}

void KeywordIndex::find(std::string_view text, std::vector<int>& tags) const {
  CCSCOPE_CHECK(built_, "KeywordIndex::find before build");
  if (++generation_ == 0) {
    std::fill(seen_.begin(), seen_.end(), 0);
    generation_ = 1;
  }
  const int32_t* table = next_.data();
  int32_t s = 0;
  for (char ch : text) {
    s = table[static_cast<size_t>(s) * kAlphabet + static_cast<unsigned char>(ch)];
    if (!outputs_[s].empty()) {
      for (int tag : outputs_[s]) {
        if (seen_[tag] != generation_) {
          seen_[tag] = generation_;
          tags.push_back(tag);
        }
      }
    }
  }
}

}  // namespace ccscope::diagnostics
