// Ring allreduce (reduce-scatter + allgather), segmented and pipelined.
//
// Step k of the reduce-scatter: rank r sends chunk (r-k) and receives chunk (r-k-1), reducing
// it with its own input into the output. The chunk sent at step k+1 is the one reduced at
// step k, so segment g of step k+1 may leave as soon as segment g of step k is reduced: that is
// the pipeline. After n-1 steps rank r owns chunk (r+1); the allgather passes owned chunks on.
#include <algorithm>

#include "collectives/schedule.h"
#include "collectives/schedule_ops.h"

namespace ccscope::collectives {

namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

struct Chunking {
  uint64_t count;
  int ranks;
  uint64_t segment;
  uint64_t offset(int c) const { return partOffset(count, ranks, c); }
  uint64_t length(int c) const { return offset(c + 1) - offset(c); }
  // A zero-length chunk still carries one (empty) message so both sides stay in step.
  uint64_t segments(int c) const {
    return std::max<uint64_t>(1, (length(c) + segment - 1) / segment);
  }
  uint64_t segOffset(int c, uint64_t g) const { return std::min(length(c), g * segment); }
  uint64_t segLength(int c, uint64_t g) const {
    return std::min(length(c), (g + 1) * segment) - segOffset(c, g);
  }
};

// Builds one rank's ring: the reduce-scatter steps, the avg scale, then the allgather steps.
// Tags depend only on (phase, step, segment), never on which chunk a rank handles, so both ends
// of every message agree; chunk 0 is the largest, so it bounds the segments per step.
class RingBuilder {
 public:
  RingBuilder(int rank, int ranks, uint64_t count, uint64_t segment_elems)
      : s_(newSchedule({.rank = rank, .ranks = ranks, .count = count})),
        ch_{count, ranks, std::max<uint64_t>(1, segment_elems)},
        rank_(rank),
        ranks_(ranks),
        right_(mod(rank + 1, ranks)),
        left_(mod(rank - 1, ranks)),
        max_chunk_(ch_.length(0)),
        tags_per_step_(static_cast<uint32_t>(ch_.segments(0))) {
    s_.scratch_elems = 2 * max_chunk_;  // double-buffered: step k receives into half k%2
  }

  // Step k: send chunk (r-k), receive chunk (r-k-1) into scratch and reduce it into the output.
  void reduceScatterStep(int k) {
    const int send_c = mod(rank_ - k, ranks_), recv_c = mod(rank_ - k - 1, ranks_);
    const uint64_t segs = std::max(ch_.segments(send_c), ch_.segments(recv_c));
    std::vector<uint32_t> now(ch_.segments(recv_c), UINT32_MAX);
    auto& half = reduced_[k % 2];
    half.resize(std::max<size_t>(half.size(), segs), UINT32_MAX);
    const Buf src_buf = k == 0 ? Buf::kInput : Buf::kOutput;
    for (uint64_t g = 0; g < segs; ++g) {
      const uint32_t tag = step_base_ + static_cast<uint32_t>(g);
      if (g < ch_.segments(send_c)) {
        uint32_t after = (k > 0 && g < produced_.size()) ? produced_[g] : UINT32_MAX;
        addSend(tag, {src_buf, ch_.offset(send_c) + ch_.segOffset(send_c, g)},
                ch_.segLength(send_c, g), after);
      }
      if (g < ch_.segments(recv_c)) {
        uint64_t scratch_off = (k % 2) * max_chunk_ + ch_.segOffset(recv_c, g);
        uint64_t out_off = ch_.offset(recv_c) + ch_.segOffset(recv_c, g);
        uint32_t r = s_.add(Op{.kind = OpKind::kRecv,
                               .peer = left_,
                               .tag = tag,
                               .dst = {Buf::kScratch, scratch_off},
                               .count = ch_.segLength(recv_c, g)},
                            {half[g]});
        now[g] = half[g] = s_.add(Op{.kind = OpKind::kReduce,
                                     .dst = {Buf::kOutput, out_off},
                                     .a = {Buf::kInput, out_off},
                                     .b = {Buf::kScratch, scratch_off},
                                     .count = ch_.segLength(recv_c, g)},
                                  {r});
      }
    }
    endStep(std::move(now));
  }

  // After the reduce-scatter rank r owns the final chunk (r+1): scaled in place for avg.
  void scaleOwned() {
    const int owned = mod(rank_ + 1, ranks_);
    for (uint64_t g = 0; g < ch_.segments(owned); ++g)
      produced_[g] = s_.add(Op{.kind = OpKind::kScale,
                               .dst = {Buf::kOutput, ch_.offset(owned) + ch_.segOffset(owned, g)},
                               .count = ch_.segLength(owned, g)},
                            {produced_[g]});
  }

  // Step k of the allgather: pass on chunk (r+1-k), receive chunk (r-k) in place.
  void allgatherStep(int k) {
    const int send_c = mod(rank_ + 1 - k, ranks_), recv_c = mod(rank_ - k, ranks_);
    const uint64_t segs = std::max(ch_.segments(send_c), ch_.segments(recv_c));
    std::vector<uint32_t> now(ch_.segments(recv_c), UINT32_MAX);
    for (uint64_t g = 0; g < segs; ++g) {
      const uint32_t tag = step_base_ + static_cast<uint32_t>(g);
      if (g < ch_.segments(send_c))
        addSend(tag, {Buf::kOutput, ch_.offset(send_c) + ch_.segOffset(send_c, g)},
                ch_.segLength(send_c, g), g < produced_.size() ? produced_[g] : UINT32_MAX);
      if (g < ch_.segments(recv_c))
        now[g] = s_.add(Op{.kind = OpKind::kRecv,
                           .peer = left_,
                           .tag = tag,
                           .dst = {Buf::kOutput, ch_.offset(recv_c) + ch_.segOffset(recv_c, g)},
                           .count = ch_.segLength(recv_c, g)});
    }
    endStep(std::move(now));
  }

  Schedule finish() {
    s_.finalize();
    return std::move(s_);
  }

 private:
  void addSend(uint32_t tag, Span from, uint64_t count, uint32_t after) {
    s_.add(Op{.kind = OpKind::kSend, .peer = right_, .tag = tag, .a = from, .count = count},
           {after});
  }
  // The ops of this step are what the next step sends; its tags follow this step's.
  void endStep(std::vector<uint32_t> now) {
    produced_ = std::move(now);
    step_base_ += tags_per_step_;
  }

  Schedule s_;
  const Chunking ch_;
  const int rank_, ranks_, right_, left_;
  const uint64_t max_chunk_;
  const uint32_t tags_per_step_;
  uint32_t step_base_ = 0;
  std::vector<uint32_t> produced_;    // per segment: the op that last wrote it (to send next)
  std::vector<uint32_t> reduced_[2];  // per scratch half, per segment: its reduce op
};

}  // namespace

Schedule ringAllreduceSchedule(int rank, int ranks, uint64_t count, uint64_t segment_elems,
                               bool avg) {
  if (ranks == 1) return copySchedule({.rank = rank, .count = count}, count);
  RingBuilder ring(rank, ranks, count, segment_elems);
  for (int k = 0; k < ranks - 1; ++k) ring.reduceScatterStep(k);
  if (avg) ring.scaleOwned();
  for (int k = 0; k < ranks - 1; ++k) ring.allgatherStep(k);
  return ring.finish();
}

}  // namespace ccscope::collectives
