// The one way to write a schedule. An author states only what moves where; the builder adds every
// read-after-write, write-after-read and write-after-write edge from the memory each op touches.
// The executor runs sends and receives asynchronously (a send reads its source, a receive writes
// its target, until completion), so a missed edge is a data race that only shows up under load;
// deriving the edges removes the class.
//
// One schedule serves out-of-place and in-place runs, so hazards are derived in both layouts:
// Input and Output apart, and (where the collective allows in place) both inside the receive
// buffer at the offsets of collective.h's Geometry. A copy onto itself in place (the executor
// skips it) touches nothing there.
//
// Zero-length rule: an op of zero elements is not emitted (the call returns kNoOp). Both ends of
// a message derive its length from the same geometry, so both drop it and their message counts
// agree. The only zero-byte messages are the explicit signals (sendSignal/recvSignal), which
// carry ordering alone (the barrier).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/schedule.h"

namespace ccscope::collectives {

// What the builder returns for an op it did not emit; `after` lists ignore it.
constexpr uint32_t kNoOp = UINT32_MAX;

inline int ringMod(int a, int n) { return ((a % n) + n) % n; }
inline Span atIn(uint64_t off) { return {Buf::kInput, off}; }
inline Span atOut(uint64_t off) { return {Buf::kOutput, off}; }
inline Span atScratch(uint64_t off) { return {Buf::kScratch, off}; }
inline Span at(Span s, uint64_t off) { return {s.buf, s.offset + off}; }

// Ops that must come first for a reason other than memory: message pacing (all-to-all's steps
// and window) and the barrier's rounds. Hazards never go here; the builder derives them.
using After = std::vector<uint32_t>;

class ScheduleBuilder {
 public:
  // The layouts come from geometry(p.collective, p.count, p.ranks, p.rank, p.plan).
  explicit ScheduleBuilder(const ScheduleParams& p);

  void setScratch(uint64_t elems) { s_.scratch_elems = elems; }

  // Each returns the op's index, or kNoOp when count is 0 (nothing emitted).
  uint32_t send(int peer, uint32_t tag, Span src, uint64_t count, const After& after = {});
  uint32_t recv(int peer, uint32_t tag, Span dst, uint64_t count, const After& after = {});
  uint32_t reduce(Span dst, Span a, Span b, uint64_t count);  // dst = a op b
  uint32_t copy(Span dst, Span src, uint64_t count);
  uint32_t scale(Span dst, uint64_t count);
  // Zero-byte messages that carry only ordering; always emitted.
  uint32_t sendSignal(int peer, uint32_t tag, const After& after);
  uint32_t recvSignal(int peer, uint32_t tag, const After& after);

  // Builds the dependents lists and hands the schedule over; the builder is spent.
  Schedule finish();

 private:
  struct Access {
    uint64_t end = 0;
    uint32_t writer = kNoOp;        // last op that wrote the range
    std::vector<uint32_t> readers;  // ops that read it since
  };
  using Space = std::map<uint64_t, Access>;  // begin -> access; disjoint, covering [0, 2^64)
  // One layout the schedule may run in: where Input and Output land, one space per buffer.
  struct Layout {
    bool in_place = false;
    uint64_t in_offset = 0, out_offset = 0;
    std::array<Space, 3> spaces;
  };
  struct Touch {
    Span at;
    bool write;
  };

  static Span resolve(const Layout& l, Span s);
  static Space::iterator split(Space& sp, uint64_t at);
  static void hazards(Space& sp, uint64_t begin, uint64_t end, bool write,
                      std::vector<uint32_t>& deps);
  static void record(Space& sp, uint64_t begin, uint64_t end, bool write, uint32_t op);
  // Whether the layout runs the op (a copy onto itself in place is skipped by the executor).
  static bool runs(const Layout& l, const Op& op);
  uint32_t add(const Op& op, std::initializer_list<Touch> touches, const After& after);
  uint32_t emit(const Op& op, std::vector<uint32_t> deps);

  Schedule s_;
  std::vector<Layout> layouts_;
};

// The one segmenter: a range of `length` elements cut into pipeline segments of at most
// `segment` elements (0 counts as 1). An empty range has no segments, like the builder's
// zero-length rule: both ends know the length, so both skip the message.
class Segments {
 public:
  Segments(uint64_t length, uint64_t segment)
      : length_(length), seg_(std::max<uint64_t>(1, segment)) {}
  uint64_t count() const { return length_ / seg_ + (length_ % seg_ != 0); }
  // Clamped, so any g is safe: a segment past the end is empty.
  uint64_t offset(uint64_t g) const { return g >= count() ? length_ : g * seg_; }
  uint64_t size(uint64_t g) const { return std::min(seg_, length_ - offset(g)); }
  // Calls f(g, base + offset(g), size(g)) for every segment.
  template <class F>
  void forEach(uint64_t base, F&& f) const {
    for (uint64_t g = 0; g < count(); ++g) f(g, base + offset(g), size(g));
  }

 private:
  uint64_t length_, seg_;
};

// The one-rank case of every collective here: the output is the input.
Schedule copySchedule(const ScheduleParams& p, uint64_t elems);

}  // namespace ccscope::collectives
