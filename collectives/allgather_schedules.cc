// Allgather schedules: ring (segmented, pipelined), recursive doubling, Bruck.
//
// In place the input is block r of the output. None of these writes block r of the output
// except by copying the input onto itself (a no-op the executor skips) or, in Bruck, after the
// input was read; so in-place and out-of-place runs share one schedule.
#include <bit>

#include "collectives/movement_schedules.h"
#include "collectives/schedule_builder.h"

namespace ccscope::collectives {

Schedule ringAllgatherSchedule(const ScheduleParams& p) {
  const int n = p.ranks, r = p.rank;
  const uint64_t block = p.count / n;
  ScheduleBuilder b(p);
  b.copy(atOut(r * block), atIn(0), block);
  const Segments seg(block, p.segment_elems);
  const auto segs = static_cast<uint32_t>(seg.count());
  const int right = ringMod(r + 1, n), left = ringMod(r - 1, n);
  // Step k sends block r-k (received at step k-1, segment by segment) and receives r-k-1.
  for (int k = 0; k < n - 1; ++k) {
    const uint64_t send_at = ringMod(r - k, n) * block, recv_at = ringMod(r - k - 1, n) * block;
    seg.forEach(0, [&](uint64_t g, uint64_t off, uint64_t len) {
      const uint32_t tag = static_cast<uint32_t>(k) * segs + static_cast<uint32_t>(g);
      b.send(right, tag, k == 0 ? atIn(off) : atOut(send_at + off), len);
      b.recv(left, tag, atOut(recv_at + off), len);
    });
  }
  return b.finish();
}

Schedule recursiveDoublingAllgatherSchedule(const ScheduleParams& p) {
  const int n = p.ranks, r = p.rank;
  if (!std::has_single_bit(static_cast<unsigned>(n))) return bruckAllgatherSchedule(p);
  const uint64_t block = p.count / n;
  ScheduleBuilder b(p);
  b.copy(atOut(r * block), atIn(0), block);
  uint32_t step = 0;
  for (int d = 1; d < n; d *= 2, ++step) {
    const int peer = r ^ d;
    const uint64_t mine = static_cast<uint64_t>(r & ~(d - 1)) * block;
    const uint64_t theirs = static_cast<uint64_t>(peer & ~(d - 1)) * block;
    const uint64_t len = static_cast<uint64_t>(d) * block;
    b.send(peer, step, d == 1 ? atIn(0) : atOut(mine), len);
    b.recv(peer, step, atOut(theirs), len);
  }
  return b.finish();
}

Schedule bruckAllgatherSchedule(const ScheduleParams& p) {
  const int n = p.ranks, r = p.rank;
  const uint64_t block = p.count / n;
  if (n == 1) return copySchedule(p, block);
  ScheduleBuilder b(p);
  b.setScratch(static_cast<uint64_t>(n) * block);
  // Scratch block i holds block (r+i) mod n; block 0 is our own.
  b.copy(atScratch(0), atIn(0), block);
  uint32_t step = 0;
  for (int d = 1; d < n; d *= 2, ++step) {
    const uint64_t len = static_cast<uint64_t>(std::min(d, n - d)) * block;
    b.send(ringMod(r - d, n), step, atScratch(0), len);
    b.recv(ringMod(r + d, n), step, atScratch(d * block), len);
  }
  // Rotate into place: scratch [0, n-r) -> output blocks [r, n); [n-r, n) -> blocks [0, r).
  const uint64_t tail = static_cast<uint64_t>(n - r) * block;
  b.copy(atOut(r * block), atScratch(0), tail);
  b.copy(atOut(0), atScratch(tail), static_cast<uint64_t>(r) * block);
  return b.finish();
}

}  // namespace ccscope::collectives
