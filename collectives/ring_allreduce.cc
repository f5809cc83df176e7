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

}  // namespace

Schedule ringAllreduceSchedule(int rank, int ranks, uint64_t count, uint64_t segment_elems,
                               bool avg) {
  if (ranks == 1) return copySchedule({.rank = rank, .count = count}, count);
  Schedule s = newSchedule({.rank = rank, .ranks = ranks, .count = count});
  Chunking ch{count, ranks, std::max<uint64_t>(1, segment_elems)};
  const int right = mod(rank + 1, ranks), left = mod(rank - 1, ranks);
  const uint64_t max_chunk = ch.length(0);
  s.scratch_elems = 2 * max_chunk;  // double-buffered: step k receives into half k%2
  // Tags depend only on (phase, step, segment), never on which chunk a rank handles, so both
  // ends of every message agree; chunk 0 is the largest, so it bounds the segments per step.
  const uint64_t tags_per_step = ch.segments(0);
  uint32_t step_base = 0;
  std::vector<uint32_t> produced;  // per segment: the op that last wrote it (to send next)
  std::vector<std::vector<uint32_t>> reduced(2);  // per scratch half, per segment: its reduce op
  for (int k = 0; k < ranks - 1; ++k) {
    int send_c = mod(rank - k, ranks), recv_c = mod(rank - k - 1, ranks);
    uint64_t segs = std::max(ch.segments(send_c), ch.segments(recv_c));
    std::vector<uint32_t> now(ch.segments(recv_c), UINT32_MAX);
    auto& half = reduced[k % 2];
    half.resize(std::max<size_t>(half.size(), segs), UINT32_MAX);
    Buf src_buf = k == 0 ? Buf::kInput : Buf::kOutput;
    for (uint64_t g = 0; g < segs; ++g) {
      const uint32_t tag = step_base + static_cast<uint32_t>(g);
      if (g < ch.segments(send_c)) {
        uint32_t after = (k > 0 && g < produced.size()) ? produced[g] : UINT32_MAX;
        s.add(Op{.kind = OpKind::kSend,
                 .peer = right,
                 .tag = tag,
                 .a = {src_buf, ch.offset(send_c) + ch.segOffset(send_c, g)},
                 .count = ch.segLength(send_c, g)},
              {after});
      }
      if (g < ch.segments(recv_c)) {
        uint64_t scratch_off = (k % 2) * max_chunk + ch.segOffset(recv_c, g);
        uint64_t out_off = ch.offset(recv_c) + ch.segOffset(recv_c, g);
        uint32_t r = s.add(Op{.kind = OpKind::kRecv,
                              .peer = left,
                              .tag = tag,
                              .dst = {Buf::kScratch, scratch_off},
                              .count = ch.segLength(recv_c, g)},
                           {half[g]});
        now[g] = half[g] = s.add(Op{.kind = OpKind::kReduce,
                                    .dst = {Buf::kOutput, out_off},
                                    .a = {Buf::kInput, out_off},
                                    .b = {Buf::kScratch, scratch_off},
                                    .count = ch.segLength(recv_c, g)},
                                 {r});
      }
    }
    produced = now;
    step_base += static_cast<uint32_t>(tags_per_step);
  }
  // The owned chunk is final: scale it for avg, then pass chunks around the ring.
  int owned = mod(rank + 1, ranks);
  if (avg)
    for (uint64_t g = 0; g < ch.segments(owned); ++g)
      produced[g] = s.add(Op{.kind = OpKind::kScale,
                             .dst = {Buf::kOutput, ch.offset(owned) + ch.segOffset(owned, g)},
                             .count = ch.segLength(owned, g)},
                          {produced[g]});
  for (int k = 0; k < ranks - 1; ++k) {
    int send_c = mod(rank + 1 - k, ranks), recv_c = mod(rank - k, ranks);
    uint64_t segs = std::max(ch.segments(send_c), ch.segments(recv_c));
    std::vector<uint32_t> now(ch.segments(recv_c), UINT32_MAX);
    for (uint64_t g = 0; g < segs; ++g) {
      const uint32_t tag = step_base + static_cast<uint32_t>(g);
      if (g < ch.segments(send_c))
        s.add(Op{.kind = OpKind::kSend,
                 .peer = right,
                 .tag = tag,
                 .a = {Buf::kOutput, ch.offset(send_c) + ch.segOffset(send_c, g)},
                 .count = ch.segLength(send_c, g)},
              {g < produced.size() ? produced[g] : UINT32_MAX});
      if (g < ch.segments(recv_c))
        now[g] = s.add(Op{.kind = OpKind::kRecv,
                          .peer = left,
                          .tag = tag,
                          .dst = {Buf::kOutput, ch.offset(recv_c) + ch.segOffset(recv_c, g)},
                          .count = ch.segLength(recv_c, g)});
    }
    produced = now;
    step_base += static_cast<uint32_t>(tags_per_step);
  }
  s.finalize();
  return s;
}

}  // namespace ccscope::collectives
