// Small builders shared by the data-movement schedules: one-line op constructors, ring
// arithmetic and the cutting of a contiguous range into pipeline segments. Header-only so each
// schedule family stays one .cc file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/schedule.h"

namespace ccscope::collectives {

// Placeholder for "no dependency" (Schedule::add skips it).
constexpr uint32_t kNoOp = UINT32_MAX;

inline int ringMod(int a, int n) { return ((a % n) + n) % n; }

inline Span atIn(uint64_t off) { return {Buf::kInput, off}; }
inline Span atOut(uint64_t off) { return {Buf::kOutput, off}; }
inline Span atScratch(uint64_t off) { return {Buf::kScratch, off}; }

inline Schedule newSchedule(const ScheduleParams& p) {
  Schedule s;
  s.rank = p.rank;
  s.ranks = p.ranks;
  s.count = p.count;
  return s;
}

inline uint32_t addSend(Schedule& s, int peer, uint32_t tag, Span src, uint64_t n,
                        const std::vector<uint32_t>& after = {}) {
  return s.add(Op{.kind = OpKind::kSend, .peer = peer, .tag = tag, .a = src, .count = n}, after);
}

inline uint32_t addRecv(Schedule& s, int peer, uint32_t tag, Span dst, uint64_t n,
                        const std::vector<uint32_t>& after = {}) {
  return s.add(Op{.kind = OpKind::kRecv, .peer = peer, .tag = tag, .dst = dst, .count = n}, after);
}

inline uint32_t addCopy(Schedule& s, Span dst, Span src, uint64_t n,
                        const std::vector<uint32_t>& after = {}) {
  return s.add(Op{.kind = OpKind::kCopy, .dst = dst, .a = src, .count = n}, after);
}

// dst = a op b, elementwise (dst may alias a or b exactly).
inline uint32_t addReduce(Schedule& s, Span dst, Span a, Span b, uint64_t n,
                          const std::vector<uint32_t>& after = {}) {
  return s.add(Op{.kind = OpKind::kReduce, .dst = dst, .a = a, .b = b, .count = n}, after);
}

inline uint32_t addScale(Schedule& s, Span dst, uint64_t n,
                         const std::vector<uint32_t>& after = {}) {
  return s.add(Op{.kind = OpKind::kScale, .dst = dst, .count = n}, after);
}

// A contiguous range cut into segments of at most `seg` elements. An empty range still has one
// (empty) segment, so both ends of a pipelined step exchange the same number of messages.
struct Segments {
  uint64_t length = 0;
  uint64_t seg = 1;
  Segments(uint64_t len, uint64_t segment) : length(len), seg(std::max<uint64_t>(1, segment)) {}
  uint64_t count() const { return std::max<uint64_t>(1, (length + seg - 1) / seg); }
  uint64_t offset(uint64_t g) const { return std::min(length, g * seg); }
  uint64_t size(uint64_t g) const { return std::min(length, (g + 1) * seg) - offset(g); }
};

// The one-rank case of every collective here: the output is the input.
inline Schedule copySchedule(const ScheduleParams& p, uint64_t elems) {
  Schedule s = newSchedule(p);
  addCopy(s, atOut(0), atIn(0), elems);
  s.finalize();
  return s;
}

}  // namespace ccscope::collectives
