// Schedule builders of the data-movement collectives (allgather, reduce-scatter, broadcast,
// sendrecv, all-to-all(v)). Each is a pure function of ScheduleParams; buffer geometry, count
// and in-place layout are those of collective.h. Every builder is correct for any rank count
// (one rank: a copy), any count (zero, fewer elements than ranks), and, where geometry allows
// in place, with the input aliased into the output as the harness lays it out, so none writes
// a region it still has to send. Tags come from the schedule's structure (step, segment) only,
// so both ends of every message agree. Registry rows and costs: movement_algorithms.cc.
#pragma once

#include "collectives/algorithms.h"
#include "collectives/schedule.h"

namespace ccscope::collectives {

// --- allgather (allgather_schedules.cc): B = count/n; block r of the output comes from rank r.
// Ring: n-1 steps, each passing on the block received in the previous step, cut into segments
// so a segment is forwarded as soon as it arrived. Sends (n-1)B.
Schedule ringAllgatherSchedule(const ScheduleParams& p);
// Recursive doubling: log2 n steps exchanging 1, 2, 4, ... blocks with rank r^d. Sends (n-1)B.
// Not a power of two: the Bruck schedule (same bytes, ceil(log2 n) steps).
Schedule recursiveDoublingAllgatherSchedule(const ScheduleParams& p);
// Bruck: ceil(log2 n) steps on a rotated copy in scratch (block i = block (r+i) mod n), step d
// sends the first min(d, n-d) blocks to r-d; two copies rotate the result into place.
Schedule bruckAllgatherSchedule(const ScheduleParams& p);

// --- reduce-scatter (reduce_scatter_schedules.cc): rank r gets block r reduced over all ranks.
// Ring: n-1 pipelined steps, partial sums double-buffered in scratch. Sends (n-1)B.
Schedule ringReduceScatterSchedule(const ScheduleParams& p);
// Recursive halving: log2 p steps exchanging half the remaining window with the partner; for
// n = p + q (p a power of two) the first 2q ranks fold pairwise first (even sends its whole
// input to odd, which returns the even rank's reduced block at the end). Sends (n-1)B; the q
// folded ranks nB.
Schedule recursiveHalvingReduceScatterSchedule(const ScheduleParams& p);

// --- broadcast (broadcast_schedules.cc): the root's input lands in every output.
// Chain: root -> root+1 -> ... in segments; every rank but the last forwards count elements.
Schedule chainBroadcastSchedule(const ScheduleParams& p);
// Binomial tree rooted at the root, segmented: a rank forwards each segment to its children
// (largest subtree first) as soon as it arrived. Sends count per child.
Schedule binomialBroadcastSchedule(const ScheduleParams& p);
// Scatter of n near-equal pieces down a binomial tree, then a ring allgather that skips the
// pieces a rank already holds (the root holds all). Every element reaches each rank once.
Schedule scatterAllgatherBroadcastSchedule(const ScheduleParams& p);

// --- sendrecv (sendrecv_schedules.cc): input to r+1, output from r-1.
Schedule directSendrecvSchedule(const ScheduleParams& p);

// --- all-to-all and all-to-allv (alltoall_schedules.cc). Zero-length blocks are never sent.
// Pairwise: n-1 steps; step k sends to r+k and receives from r-k, after step k-1 completed.
Schedule pairwiseAlltoallSchedule(const ScheduleParams& p);
Schedule pairwiseAlltoallvSchedule(const ScheduleParams& p);
// Linear: every send and receive posted at once, at most kLinearWindow in flight per direction.
Schedule linearAlltoallSchedule(const ScheduleParams& p);
Schedule linearAlltoallvSchedule(const ScheduleParams& p);
// Bruck (alltoall_bruck.cc): rotate into scratch, ceil(log2 n) steps each sending the blocks
// whose index has bit k set to r+2^k (packed), then rotate back. Sends B * sum popcount(i).
Schedule bruckAlltoallSchedule(const ScheduleParams& p);

constexpr int kLinearWindow = 8;

}  // namespace ccscope::collectives
