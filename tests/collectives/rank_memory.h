// One rank's memory in lineage_sim.h: the value of every element of Input, Output and Scratch
// (Input is Output when the collective runs in place) and, per element, how many transfers in
// flight write it (receives) or read it (sends), which is what a data race is judged against.
#pragma once

#include <cstdint>
#include <vector>

#include "collectives/schedule.h"

namespace ccscope::collectives::testing {

class RankMemory {
 public:
  RankMemory(int rank, uint64_t count, uint64_t scratch, bool in_place) : in_place_(in_place) {
    values_[0].assign(count, uint64_t{1} << rank);
    values_[1].assign(count, in_place ? uint64_t{1} << rank : 0);
    values_[2].assign(scratch, 0);
    for (int b = 0; b < 3; ++b) {
      writing_[b].assign(values_[b].size(), 0);
      reading_[b].assign(values_[b].size(), 0);
    }
  }

  bool fits(const Span& sp, uint64_t count) const {
    return sp.offset + count <= values_[index(sp.buf)].size();
  }
  uint64_t& at(const Span& sp, uint64_t i) { return values_[index(sp.buf)][sp.offset + i]; }
  const std::vector<uint64_t>& output() const { return values_[1]; }

  // Whether an access of [sp, +count) would race with a transfer in flight: anything overlapping
  // a receive's target, and writes overlapping a send's source.
  bool busy(const Span& sp, uint64_t count, bool write) const {
    const int b = index(sp.buf);
    for (uint64_t e = sp.offset; e < sp.offset + count; ++e)
      if (writing_[b][e] || (write && reading_[b][e])) return true;
    return false;
  }
  // Marks [sp, +count) as read (a send) or written (a receive) by a transfer, or unmarks it.
  void inFlight(const Span& sp, uint64_t count, bool is_send, int delta) {
    const int b = index(sp.buf);
    auto& v = is_send ? reading_[b] : writing_[b];
    for (uint64_t e = sp.offset; e < sp.offset + count; ++e)
      v[e] = static_cast<uint16_t>(v[e] + delta);
  }

 private:
  int index(Buf b) const {
    return b == Buf::kInput ? (in_place_ ? 1 : 0) : b == Buf::kOutput ? 1 : 2;
  }

  bool in_place_;
  std::vector<uint64_t> values_[3];
  std::vector<uint16_t> writing_[3], reading_[3];
};

}  // namespace ccscope::collectives::testing
