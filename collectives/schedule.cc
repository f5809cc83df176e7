#include "collectives/schedule.h"

#include "collectives/schedule_builder.h"

namespace ccscope::collectives {

void Schedule::finalize() {
  std::vector<uint32_t> counts(ops.size(), 0);
  for (uint32_t d : deps) ++counts[d];
  uint32_t pos = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    ops[i].next_begin = pos;
    ops[i].next_count = 0;
    pos += counts[i];
  }
  dependents.assign(deps.size(), 0);
  for (uint32_t i = 0; i < ops.size(); ++i)
    for (uint32_t k = 0; k < ops[i].dep_count; ++k) {
      Op& parent = ops[deps[ops[i].dep_begin + k]];
      dependents[parent.next_begin + parent.next_count++] = i;
    }
}

Schedule barrierSchedule(int rank, int ranks) {
  ScheduleBuilder b({.rank = rank, .ranks = ranks});
  // Round k's messages prove every rank up to 2^(k+1)-1 behind has arrived, but only once
  // round k-1's receive is in: an ordering that touches no memory, so it is stated.
  uint32_t prev_recv = kNoOp;
  uint32_t round = 0;
  for (int dist = 1; dist < ranks; dist *= 2, ++round) {
    b.sendSignal((rank + dist) % ranks, round, {prev_recv});
    prev_recv = b.recvSignal((rank - dist + ranks) % ranks, round, {prev_recv});
  }
  return b.finish();
}

}  // namespace ccscope::collectives
