// Builds a Schedule whose dependencies follow from the memory each op touches, so a schedule
// author states only what moves where and the builder adds every read-after-write,
// write-after-read and write-after-write edge. The executor runs sends and receives
// asynchronously (a send reads its source, a receive writes its target, until completion), so a
// missed edge is a data race that only shows up under load; deriving the edges removes the class.
//
// Input and Output are tracked as one address space: in place they are the same buffer at the
// same offset, and a schedule is built once for both modes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "collectives/schedule.h"

namespace ccscope::collectives {

class ScheduleBuilder {
 public:
  explicit ScheduleBuilder(Schedule& s) : s_(s) {}

  uint32_t send(int peer, uint32_t tag, Span src, uint64_t count);
  uint32_t recv(int peer, uint32_t tag, Span dst, uint64_t count);
  uint32_t reduce(Span dst, Span a, Span b, uint64_t count);  // dst = a op b
  uint32_t copy(Span dst, Span src, uint64_t count);
  uint32_t scale(Span dst, uint64_t count);

 private:
  struct Access {
    uint64_t end = 0;
    uint32_t writer = UINT32_MAX;   // last op that wrote the range
    std::vector<uint32_t> readers;  // ops that read it since
  };
  using Space = std::map<uint64_t, Access>;  // begin -> access; disjoint, covering [0, 2^64)

  Space& space(Buf b) { return b == Buf::kScratch ? scratch_ : user_; }
  Space::iterator split(Space& sp, uint64_t at);
  // Collects the edges an access of [begin, begin+count) needs (writers; for writes, readers).
  void hazards(Span at, uint64_t count, bool write, std::vector<uint32_t>& deps);
  void record(Span at, uint64_t count, bool write, uint32_t op);
  uint32_t add(const Op& op, std::initializer_list<Span> reads, Span write, bool writes);

  Schedule& s_;
  Space user_{{0, Access{UINT64_MAX, UINT32_MAX, {}}}};
  Space scratch_{{0, Access{UINT64_MAX, UINT32_MAX, {}}}};
};

// Number of segments of `segment` elements a message of `length` elements is cut into (an empty
// message has none: both ends know its length, so both skip it).
inline uint64_t segmentCount(uint64_t length, uint64_t segment) {
  return (length + segment - 1) / segment;
}

// Calls f(g, offset, length) for segment g of the message [offset, offset + length).
template <class F>
void forEachSegment(uint64_t offset, uint64_t length, uint64_t segment, F&& f) {
  for (uint64_t g = 0, at = 0; at < length; ++g, at += segment)
    f(g, offset + at, std::min(segment, length - at));
}

}  // namespace ccscope::collectives
