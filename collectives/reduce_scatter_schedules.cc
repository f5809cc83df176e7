// Reduce-scatter schedules: ring (segmented, pipelined) and recursive halving (with the fold for
// rank counts that are not a power of two).
//
// In place the output is block r of the input. Block r of the input is only ever read by the
// reduction that writes the same elements of the output (an exact alias, safe elementwise) or,
// in a fold, by the reduction that precedes every later write; so one schedule serves both.
#include <bit>

#include "collectives/movement_schedules.h"
#include "collectives/schedule_ops.h"

namespace ccscope::collectives {

Schedule ringReduceScatterSchedule(const ScheduleParams& p) {
  const int n = p.ranks, r = p.rank;
  const uint64_t block = p.count / n;
  if (n == 1) return copySchedule(p, block);
  Schedule s = newSchedule(p);
  s.scratch_elems = 2 * block;  // step k receives and accumulates into half k % 2
  const Segments seg(block, p.segment_elems);
  const uint32_t segs = static_cast<uint32_t>(seg.count());
  const int right = ringMod(r + 1, n), left = ringMod(r - 1, n);
  // Step k sends the partial sum of block r-k-1 (its own input at step 0) and receives that of
  // block r-k-2, so after n-1 steps the block received last is r, complete.
  std::vector<uint32_t> reduced(segs, kNoOp), sent(segs, kNoOp);
  for (int k = 0; k < n - 1; ++k) {
    const bool last = k == n - 2;
    const uint64_t send_blk = ringMod(r - k - 1, n) * block;
    const uint64_t recv_blk = ringMod(r - k - 2, n) * block;
    const uint64_t half = (k % 2) * block, prev_half = ((k + 1) % 2) * block;
    for (uint32_t g = 0; g < segs; ++g) {
      const uint32_t tag = static_cast<uint32_t>(k) * segs + g;
      const uint64_t off = seg.offset(g), len = seg.size(g);
      Span src = k == 0 ? atIn(send_blk + off) : atScratch(prev_half + off);
      const uint32_t snd = addSend(s, right, tag, src, len, {reduced[g]});
      // Half k % 2 was last read by step k-1's send (it holds step k-2's partial sum).
      const uint32_t rcv = addRecv(s, left, tag, atScratch(half + off), len, {sent[g]});
      Span dst = last ? atOut(off) : atScratch(half + off);
      reduced[g] = addReduce(s, dst, atIn(recv_blk + off), atScratch(half + off), len, {rcv});
      if (last && p.avg) addScale(s, atOut(off), len, {reduced[g]});
      sent[g] = snd;
    }
  }
  s.finalize();
  return s;
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

// Which op last wrote each range of the accumulator: later readers depend on the overlapping.
struct Piece {
  uint64_t begin, end;
  uint32_t op;
};

std::vector<uint32_t> overlapping(const std::vector<Piece>& pieces, uint64_t begin, uint64_t end) {
  std::vector<uint32_t> out;
  // A piece overlaps when the ranges intersect; an empty piece when it lies inside [begin, end].
  for (const Piece& pc : pieces) {
    const bool intersects = pc.begin < end && begin < pc.end;
    const bool empty_inside = pc.begin == pc.end && pc.begin >= begin && pc.begin <= end;
    if (intersects || empty_inside) out.push_back(pc.op);
  }
  return out;
}

constexpr uint32_t kFoldTag = 0;       // even rank's input to its odd partner
constexpr uint32_t kReturnTag = 1;     // the even rank's reduced block back
constexpr uint32_t kFirstStepTag = 2;  // then step j, segment g: kFirstStepTag + (j << 16) + g

// The log2 p exchanges of virtual rank v; returns the pieces of its final window. The
// accumulator lives at scratch [0, count), receives at scratch [count, 2 count), each at the
// element offsets of the data they hold.
std::vector<Piece> halve(Schedule& s, const ScheduleParams& prm, const Halving& h, int v,
                         std::vector<Piece> acc) {
  const uint64_t count = prm.count, own = static_cast<uint64_t>(prm.rank) * h.block;
  int lo = 0;
  uint32_t step = 0;
  for (int size = h.p; size > 1; size /= 2, ++step) {
    const int half = size / 2, mid = lo + half;
    const bool lower = v < mid;
    const int peer = h.realRank(lower ? v + half : v - half);
    const uint64_t keep_b = h.elem(lower ? lo : mid), keep_e = h.elem(lower ? mid : lo + size);
    const uint64_t give_b = h.elem(lower ? mid : lo), give_e = h.elem(lower ? lo + size : mid);
    const bool from_input = acc.empty(), last = half == 1;
    const Segments give(give_e - give_b, prm.segment_elems),
        keep(keep_e - keep_b, prm.segment_elems);
    // Each step has its own partner, so tags only need to order one step's segments.
    const uint32_t tag0 = kFirstStepTag + (step << 16);
    for (uint64_t g = 0; g < give.count(); ++g) {
      const uint64_t b = give_b + give.offset(g), len = give.size(g);
      addSend(s, peer, tag0 + static_cast<uint32_t>(g), from_input ? atIn(b) : atScratch(b), len,
              overlapping(acc, b, b + len));
    }
    std::vector<Piece> now;
    for (uint64_t g = 0; g < keep.count(); ++g) {
      const uint64_t b = keep_b + keep.offset(g), e = b + keep.size(g);
      // The receive area was last read by the reductions that wrote the same accumulator range.
      const std::vector<uint32_t> prior = overlapping(acc, b, e);
      const uint32_t rcv =
          addRecv(s, peer, tag0 + static_cast<uint32_t>(g), atScratch(count + b), e - b, prior);
      std::vector<uint32_t> deps = prior;
      deps.push_back(rcv);
      auto reduce = [&](uint64_t x, uint64_t y, bool to_output) {
        Span dst = to_output ? atOut(x - own) : atScratch(x);
        Span a = from_input ? atIn(x) : atScratch(x);
        now.push_back({x, y, addReduce(s, dst, a, atScratch(count + x), y - x, deps)});
      };
      if (!last || b == e) {
        reduce(b, e, false);
        continue;
      }
      // On the last step the part that is this rank's block goes straight to the output.
      const uint64_t x = std::clamp(own, b, e), y = std::clamp(own + h.block, b, e);
      if (b < x) reduce(b, x, false);
      if (x < y) reduce(x, y, true);
      if (y < e) reduce(y, e, false);
    }
    acc = std::move(now);
    lo = lower ? lo : mid;
  }
  return acc;
}

}  // namespace

Schedule recursiveHalvingReduceScatterSchedule(const ScheduleParams& p) {
  const int n = p.ranks, r = p.rank;
  const uint64_t block = p.count / n, own = static_cast<uint64_t>(r) * block;
  if (n == 1) return copySchedule(p, block);
  const int pow2 = static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
  const Halving h{n, pow2, n - pow2, block};
  Schedule s = newSchedule(p);
  s.scratch_elems = 2 * p.count;
  const int v = h.virtualRank(r);
  if (v < 0) {  // folded out: hand everything to r+1, get block r back
    const uint32_t snd = addSend(s, r + 1, kFoldTag, atIn(0), p.count);
    const uint32_t rcv =
        addRecv(s, r + 1, kReturnTag, atOut(0), block, {snd});  // in place: aliases the input
    if (p.avg) addScale(s, atOut(0), block, {rcv});
    s.finalize();
    return s;
  }
  std::vector<Piece> acc;
  if (r < 2 * h.q) {  // absorb the even partner's input
    const uint32_t rcv = addRecv(s, r - 1, kFoldTag, atScratch(p.count), p.count);
    acc.push_back(
        {0, p.count, addReduce(s, atScratch(0), atIn(0), atScratch(p.count), p.count, {rcv})});
  }
  std::vector<Piece> final_pieces = halve(s, p, h, v, std::move(acc));
  if (r < 2 * h.q)
    addSend(s, r - 1, kReturnTag, atScratch(own - block), block,
            overlapping(final_pieces, own - block, own));
  if (p.avg) addScale(s, atOut(0), block, overlapping(final_pieces, own, own + block));
  s.finalize();
  return s;
}

}  // namespace ccscope::collectives
