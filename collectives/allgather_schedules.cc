// Allgather schedules: ring (segmented, pipelined), recursive doubling, Bruck.
//
// In place the input is block r of the output. None of these writes block r of the output
// except by copying the input onto itself (a no-op the executor skips) or, in Bruck, after the
// input was read; so in-place and out-of-place runs share one schedule.
#include <bit>

#include "collectives/movement_schedules.h"
#include "collectives/schedule_ops.h"

namespace ccscope::collectives {

Schedule ringAllgatherSchedule(const ScheduleParams& p) {
  const int n = p.ranks, r = p.rank;
  const uint64_t block = p.count / n;
  Schedule s = newSchedule(p);
  addCopy(s, atOut(r * block), atIn(0), block);
  if (n == 1) {
    s.finalize();
    return s;
  }
  const Segments seg(block, p.segment_elems);
  const uint32_t segs = static_cast<uint32_t>(seg.count());
  const int right = ringMod(r + 1, n), left = ringMod(r - 1, n);
  // Step k sends block r-k (received at step k-1, segment by segment) and receives r-k-1.
  std::vector<uint32_t> arrived(segs, kNoOp);
  for (int k = 0; k < n - 1; ++k) {
    const uint64_t send_at = ringMod(r - k, n) * block, recv_at = ringMod(r - k - 1, n) * block;
    for (uint32_t g = 0; g < segs; ++g) {
      const uint32_t tag = static_cast<uint32_t>(k) * segs + g;
      Span src = k == 0 ? atIn(seg.offset(g)) : atOut(send_at + seg.offset(g));
      addSend(s, right, tag, src, seg.size(g), {arrived[g]});
      arrived[g] = addRecv(s, left, tag, atOut(recv_at + seg.offset(g)), seg.size(g));
    }
  }
  s.finalize();
  return s;
}

Schedule recursiveDoublingAllgatherSchedule(const ScheduleParams& p) {
  const int n = p.ranks, r = p.rank;
  if (!std::has_single_bit(static_cast<unsigned>(n))) return bruckAllgatherSchedule(p);
  const uint64_t block = p.count / n;
  Schedule s = newSchedule(p);
  // Everything this rank holds so far: its own block and each step's receive.
  std::vector<uint32_t> held{addCopy(s, atOut(r * block), atIn(0), block)};
  uint32_t step = 0;
  for (int d = 1; d < n; d *= 2, ++step) {
    const int peer = r ^ d;
    const uint64_t mine = static_cast<uint64_t>(r & ~(d - 1)) * block;
    const uint64_t theirs = static_cast<uint64_t>(peer & ~(d - 1)) * block;
    const uint64_t len = static_cast<uint64_t>(d) * block;
    if (d == 1)
      addSend(s, peer, step, atIn(0), len);
    else
      addSend(s, peer, step, atOut(mine), len, held);
    held.push_back(addRecv(s, peer, step, atOut(theirs), len));
  }
  s.finalize();
  return s;
}

Schedule bruckAllgatherSchedule(const ScheduleParams& p) {
  const int n = p.ranks, r = p.rank;
  const uint64_t block = p.count / n;
  if (n == 1) return copySchedule(p, block);
  Schedule s = newSchedule(p);
  s.scratch_elems = static_cast<uint64_t>(n) * block;
  // Scratch block i holds block (r+i) mod n; block 0 is our own.
  std::vector<uint32_t> held{addCopy(s, atScratch(0), atIn(0), block)};
  uint32_t step = 0;
  for (int d = 1; d < n; d *= 2, ++step) {
    const uint64_t len = static_cast<uint64_t>(std::min(d, n - d)) * block;
    addSend(s, ringMod(r - d, n), step, atScratch(0), len, held);
    held.push_back(addRecv(s, ringMod(r + d, n), step, atScratch(d * block), len));
  }
  // Rotate into place: scratch [0, n-r) -> output blocks [r, n); [n-r, n) -> blocks [0, r).
  const uint64_t tail = static_cast<uint64_t>(n - r) * block;
  addCopy(s, atOut(r * block), atScratch(0), tail, held);
  addCopy(s, atOut(0), atScratch(tail), static_cast<uint64_t>(r) * block, held);
  s.finalize();
  return s;
}

}  // namespace ccscope::collectives
