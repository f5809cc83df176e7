// Ring allreduce (reduce-scatter + allgather), segmented and pipelined.
//
// Step k of the reduce-scatter: rank r sends chunk (r-k) and receives chunk (r-k-1), reducing
// it with its own input into the output. The chunk sent at step k+1 is the one reduced at
// step k, so segment g of step k+1 may leave as soon as segment g of step k is reduced: that is
// the pipeline. After n-1 steps rank r owns chunk (r+1); the allgather passes owned chunks on.
#include <algorithm>

#include "collectives/schedule.h"
#include "collectives/schedule_builder.h"

namespace ccscope::collectives {

namespace {

// Builds one rank's ring: the reduce-scatter steps, the avg scale, then the allgather steps.
// Tags depend only on (phase, step, segment), never on which chunk a rank handles, so both ends
// of every message agree; chunk 0 is the largest, so it bounds the segments per step. Received
// partial sums are double-buffered in scratch (step k lands in half k % 2), so step k+1's
// receive need not wait for step k's reduction to read its landing area.
class Ring {
 public:
  Ring(int rank, int ranks, uint64_t count, uint64_t segment_elems)
      : b_({.rank = rank, .ranks = ranks, .count = count}),
        count_(count),
        segment_(segment_elems),
        rank_(rank),
        ranks_(ranks),
        right_(ringMod(rank + 1, ranks)),
        left_(ringMod(rank - 1, ranks)),
        max_chunk_(length(0)),
        tags_per_step_(static_cast<uint32_t>(segments(0).count())) {
    b_.setScratch(2 * max_chunk_);
  }

  // Step k: send chunk (r-k), receive chunk (r-k-1) into scratch and reduce it into the output.
  void reduceScatterStep(int k) {
    const int send_c = ringMod(rank_ - k, ranks_), recv_c = ringMod(rank_ - k - 1, ranks_);
    const Span src = k == 0 ? atIn(offset(send_c)) : atOut(offset(send_c));
    const uint64_t landing = (k % 2) * max_chunk_;
    step(send_c, recv_c, [&](uint64_t g, const Segments& snd, const Segments& rcv) {
      b_.send(right_, tag(g), at(src, snd.offset(g)), snd.size(g));
      const uint64_t out = offset(recv_c) + rcv.offset(g), land = landing + rcv.offset(g);
      b_.recv(left_, tag(g), atScratch(land), rcv.size(g));
      b_.reduce(atOut(out), atIn(out), atScratch(land), rcv.size(g));
    });
  }

  // After the reduce-scatter rank r owns the final chunk (r+1): scaled in place for avg.
  void scaleOwned() {
    const int owned = ringMod(rank_ + 1, ranks_);
    segments(owned).forEach(
        offset(owned), [&](uint64_t, uint64_t off, uint64_t len) { b_.scale(atOut(off), len); });
  }

  // Step k of the allgather: pass on chunk (r+1-k), receive chunk (r-k) in place.
  void allgatherStep(int k) {
    const int send_c = ringMod(rank_ + 1 - k, ranks_), recv_c = ringMod(rank_ - k, ranks_);
    step(send_c, recv_c, [&](uint64_t g, const Segments& snd, const Segments& rcv) {
      b_.send(right_, tag(g), atOut(offset(send_c) + snd.offset(g)), snd.size(g));
      b_.recv(left_, tag(g), atOut(offset(recv_c) + rcv.offset(g)), rcv.size(g));
    });
  }

  Schedule finish() { return b_.finish(); }

 private:
  uint64_t offset(int c) const { return partOffset(count_, ranks_, c); }
  uint64_t length(int c) const { return offset(c + 1) - offset(c); }
  Segments segments(int c) const { return {length(c), segment_}; }
  uint32_t tag(uint64_t g) const { return step_base_ + static_cast<uint32_t>(g); }
  // Emits segment g's send and receive side by side (a segment past a chunk's end is empty and
  // dropped), so a rank's ops follow the pipeline's order; then moves the tags on a step.
  template <class F>
  void step(int send_c, int recv_c, F&& f) {
    const Segments snd = segments(send_c), rcv = segments(recv_c);
    for (uint64_t g = 0; g < std::max(snd.count(), rcv.count()); ++g) f(g, snd, rcv);
    step_base_ += tags_per_step_;
  }

  ScheduleBuilder b_;
  const uint64_t count_, segment_;
  const int rank_, ranks_, right_, left_;
  const uint64_t max_chunk_;
  const uint32_t tags_per_step_;
  uint32_t step_base_ = 0;
};

}  // namespace

Schedule ringAllreduceSchedule(int rank, int ranks, uint64_t count, uint64_t segment_elems,
                               bool avg) {
  if (ranks == 1) return copySchedule({.rank = rank, .count = count}, count);
  Ring ring(rank, ranks, count, segment_elems);
  for (int k = 0; k < ranks - 1; ++k) ring.reduceScatterStep(k);
  if (avg) ring.scaleOwned();
  for (int k = 0; k < ranks - 1; ++k) ring.allgatherStep(k);
  return ring.finish();
}

}  // namespace ccscope::collectives
