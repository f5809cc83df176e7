// Bruck all-to-all: ceil(log2 n) messages per rank instead of n-1, for small blocks.
//
// Scratch holds a rotated copy of the input, position i = the block for rank r+i. At step k
// (d = 2^k) every position with bit k set travels to rank r+d and is replaced by the block
// rank r-d had at that position; a block at position i has then moved i ranks on, so after the
// last step position i holds the block rank r-i sent to r. Positions with bit k set are packed
// into a send buffer (two, alternating, so packing step k+1 does not wait for step k's send)
// and unpacked from one receive buffer; the last step unpacks straight into the output.
#include "collectives/movement_schedules.h"
#include "collectives/schedule_builder.h"

namespace ccscope::collectives {

namespace {

struct Run {
  int first, len;   // positions [first, first+len)
  uint64_t packed;  // block offset within the packed message
};

// The positions with bit d set: [j*2d + d, j*2d + 2d) clipped to n.
std::vector<Run> runsFor(int d, int n) {
  std::vector<Run> runs;
  uint64_t packed = 0;
  for (int first = d; first < n; first += 2 * d) {
    const int len = std::min(d, n - first);
    runs.push_back({first, len, packed});
    packed += static_cast<uint64_t>(len);
  }
  return runs;
}

uint64_t packedBlocks(const std::vector<Run>& runs) {
  return runs.empty() ? 0 : runs.back().packed + static_cast<uint64_t>(runs.back().len);
}

}  // namespace

Schedule bruckAlltoallSchedule(const ScheduleParams& p) {
  const int n = p.ranks, r = p.rank;
  if (n == 1) return copySchedule(p, p.count);
  const uint64_t b = p.count / n, rot = static_cast<uint64_t>(n) * b;
  uint64_t most = 0;
  for (int d = 1; d < n; d *= 2) most = std::max(most, packedBlocks(runsFor(d, n)));
  const uint64_t send_buf[2] = {rot, rot + most * b}, recv_buf = rot + 2 * most * b;
  ScheduleBuilder sb(p);
  sb.setScratch(rot + 3 * most * b);
  const uint64_t tail = static_cast<uint64_t>(n - r) * b;
  sb.copy(atScratch(0), atIn(r * b), tail);
  sb.copy(atScratch(tail), atIn(0), static_cast<uint64_t>(r) * b);
  std::vector<bool> final_pos(n, false);  // written to the output by the last step's unpack
  uint32_t step = 0;
  for (int d = 1; d < n; d *= 2, ++step) {
    const std::vector<Run> runs = runsFor(d, n);
    const uint64_t len = packedBlocks(runs) * b;
    Span src = atScratch(runs[0].first * b);  // one run is contiguous: sent from where it is
    if (runs.size() > 1) {
      src = atScratch(send_buf[step % 2]);
      for (const Run& run : runs)
        sb.copy(at(src, run.packed * b), atScratch(run.first * b), run.len * b);
    }
    sb.send(ringMod(r + d, n), step, src, len);
    sb.recv(ringMod(r - d, n), step, atScratch(recv_buf), len);
    for (const Run& run : runs) {
      if (2 * d < n) {
        sb.copy(atScratch(run.first * b), atScratch(recv_buf + run.packed * b), run.len * b);
        continue;
      }
      for (int i = run.first; i < run.first + run.len; ++i) {  // the last step: to the output
        final_pos[i] = true;
        sb.copy(atOut(ringMod(r - i, n) * b),
                atScratch(recv_buf + (run.packed + (i - run.first)) * b), b);
      }
    }
  }
  // Position i holds the block from rank r-i.
  for (int i = 0; i < n; ++i)
    if (!final_pos[i]) sb.copy(atOut(ringMod(r - i, n) * b), atScratch(i * b), b);
  return sb.finish();
}

}  // namespace ccscope::collectives
