#include "collectives/schedule.h"

#include "core/check.h"

namespace ccscope::collectives {

uint32_t Schedule::add(const Op& op, const std::vector<uint32_t>& after) {
  Op o = op;
  o.dep_begin = static_cast<uint32_t>(deps.size());
  for (uint32_t d : after) {
    if (d == UINT32_MAX) continue;  // "no dependency" placeholder
    CCSCOPE_CHECK(d < ops.size(), "dependency on a later op");
    deps.push_back(d);
  }
  o.dep_count = static_cast<uint32_t>(deps.size()) - o.dep_begin;
  ops.push_back(o);
  return static_cast<uint32_t>(ops.size() - 1);
}

uint32_t Schedule::add(const Op& op, std::initializer_list<uint32_t> after) {
  return add(op, std::vector<uint32_t>(after));
}

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
  Schedule s;
  s.rank = rank;
  s.ranks = ranks;
  uint32_t prev_recv = UINT32_MAX;
  uint32_t round = 0;
  for (int dist = 1; dist < ranks; dist *= 2, ++round) {
    Op send{.kind = OpKind::kSend, .peer = (rank + dist) % ranks, .tag = round};
    Op recv{.kind = OpKind::kRecv, .peer = (rank - dist + ranks) % ranks, .tag = round};
    s.add(send, {prev_recv});
    prev_recv = s.add(recv, {prev_recv});
  }
  s.finalize();
  return s;
}

}  // namespace ccscope::collectives
