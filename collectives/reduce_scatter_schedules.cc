// Reduce-scatter schedules: ring (segmented, pipelined) and recursive halving (with the fold for
// rank counts that are not a power of two).
//
// In place the output is block r of the input. Block r of the input is only ever read by the
// reduction that writes the same elements of the output (an exact alias, safe elementwise) or,
// in a fold, by the reduction that precedes every later write; so one schedule serves both.
#include <bit>

#include "collectives/movement_schedules.h"
#include "collectives/schedule_builder.h"

namespace ccscope::collectives {

Schedule ringReduceScatterSchedule(const ScheduleParams& p) {
  const int n = p.ranks, r = p.rank;
  const uint64_t block = p.count / n;
  if (n == 1) return copySchedule(p, block);
  ScheduleBuilder b(p);
  b.setScratch(2 * block);  // step k receives and accumulates into half k % 2
  const Segments seg(block, p.segment_elems);
  const auto segs = static_cast<uint32_t>(seg.count());
  const int right = ringMod(r + 1, n), left = ringMod(r - 1, n);
  // Step k sends the partial sum of block r-k-1 (its own input at step 0) and receives that of
  // block r-k-2, so after n-1 steps the block received last is r, complete.
  for (int k = 0; k < n - 1; ++k) {
    const bool last = k == n - 2;
    const uint64_t send_blk = ringMod(r - k - 1, n) * block;
    const uint64_t recv_blk = ringMod(r - k - 2, n) * block;
    const uint64_t half = (k % 2) * block, prev_half = ((k + 1) % 2) * block;
    seg.forEach(0, [&](uint64_t g, uint64_t off, uint64_t len) {
      const uint32_t tag = static_cast<uint32_t>(k) * segs + static_cast<uint32_t>(g);
      b.send(right, tag, k == 0 ? atIn(send_blk + off) : atScratch(prev_half + off), len);
      b.recv(left, tag, atScratch(half + off), len);
      const Span dst = last ? atOut(off) : atScratch(half + off);
      b.reduce(dst, atIn(recv_blk + off), atScratch(half + off), len);
      if (last && p.avg) b.scale(atOut(off), len);
    });
  }
  return b.finish();
}

namespace {

// Recursive halving over p = 2^k virtual ranks. With n = p + q, ranks 2i and 2i+1 (i < q) fold
// into virtual rank i, which is responsible for blocks 2i and 2i+1; the others hold one block.
// A virtual rank's blocks are contiguous and in order, so every window of virtual ranks covers
// one contiguous element range.
struct Halving {
  int n, p, q;
  uint64_t block;
  int firstBlock(int v) const { return v < q ? 2 * v : v + q; }
  int realRank(int v) const { return v < q ? 2 * v + 1 : v + q; }
  int virtualRank(int r) const { return r < 2 * q ? (r % 2 ? r / 2 : -1) : r - q; }
  uint64_t elem(int v) const { return static_cast<uint64_t>(firstBlock(v)) * block; }
};

constexpr uint32_t kFoldTag = 0;       // even rank's input to its odd partner
constexpr uint32_t kReturnTag = 1;     // the even rank's reduced block back
constexpr uint32_t kFirstStepTag = 2;  // then step j, segment g: kFirstStepTag + (j << 16) + g

// The log2 p exchanges of virtual rank v. The accumulator lives at scratch [0, count), receives
// at scratch [count, 2 count), each at the element offsets of the data they hold; `from_input`:
// no fold fed the accumulator, so the first step reads the input.
void halve(ScheduleBuilder& b, const ScheduleParams& prm, const Halving& h, int v,
           bool from_input) {
  const uint64_t count = prm.count, own = static_cast<uint64_t>(prm.rank) * h.block;
  int lo = 0;
  uint32_t step = 0;
  for (int size = h.p; size > 1; size /= 2, ++step, from_input = false) {
    const int half = size / 2, mid = lo + half;
    const bool lower = v < mid;
    const int peer = h.realRank(lower ? v + half : v - half);
    const uint64_t keep_b = h.elem(lower ? lo : mid), keep_e = h.elem(lower ? mid : lo + size);
    const uint64_t give_b = h.elem(lower ? mid : lo), give_e = h.elem(lower ? lo + size : mid);
    const bool last = half == 1;
    auto acc = [&](uint64_t x) { return from_input ? atIn(x) : atScratch(x); };
    // Each step has its own partner, so tags only need to order one step's segments.
    const uint32_t tag0 = kFirstStepTag + (step << 16);
    Segments(give_e - give_b, prm.segment_elems)
        .forEach(give_b, [&](uint64_t g, uint64_t x, uint64_t len) {
          b.send(peer, tag0 + static_cast<uint32_t>(g), acc(x), len);
        });
    Segments(keep_e - keep_b, prm.segment_elems)
        .forEach(keep_b, [&](uint64_t g, uint64_t x, uint64_t len) {
          b.recv(peer, tag0 + static_cast<uint32_t>(g), atScratch(count + x), len);
          auto reduce = [&](uint64_t from, uint64_t to, bool to_output) {
            b.reduce(to_output ? atOut(from - own) : atScratch(from), acc(from),
                     atScratch(count + from), to - from);
          };
          if (!last) {
            reduce(x, x + len, false);
            return;
          }
          // On the last step the part that is this rank's block goes straight to the output.
          const uint64_t e = x + len, ob = std::clamp(own, x, e);
          const uint64_t oe = std::clamp(own + h.block, x, e);
          reduce(x, ob, false);
          reduce(ob, oe, true);
          reduce(oe, e, false);
        });
    lo = lower ? lo : mid;
  }
}

}  // namespace

Schedule recursiveHalvingReduceScatterSchedule(const ScheduleParams& p) {
  const int n = p.ranks, r = p.rank;
  const uint64_t block = p.count / n, own = static_cast<uint64_t>(r) * block;
  if (n == 1) return copySchedule(p, block);
  const int pow2 = static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
  const Halving h{n, pow2, n - pow2, block};
  ScheduleBuilder b(p);
  b.setScratch(2 * p.count);
  const int v = h.virtualRank(r);
  if (v < 0) {  // folded out: hand everything to r+1, get block r back (in place: the input)
    b.send(r + 1, kFoldTag, atIn(0), p.count);
    b.recv(r + 1, kReturnTag, atOut(0), block);
    if (p.avg) b.scale(atOut(0), block);
    return b.finish();
  }
  const bool fold = r < 2 * h.q;
  if (fold) {  // absorb the even partner's input
    b.recv(r - 1, kFoldTag, atScratch(p.count), p.count);
    b.reduce(atScratch(0), atIn(0), atScratch(p.count), p.count);
  }
  halve(b, p, h, v, !fold);
  if (fold) b.send(r - 1, kReturnTag, atScratch(own - block), block);
  if (p.avg) b.scale(atOut(0), block);
  return b.finish();
}

}  // namespace ccscope::collectives
