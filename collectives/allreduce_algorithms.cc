// The allreduce algorithms: registry rows and their alpha-beta-gamma costs.
#include "collectives/algorithms.h"

namespace ccscope::collectives {

namespace {

Schedule ring(const ScheduleParams& p) {
  return ringAllreduceSchedule(p.rank, p.ranks, p.count, p.segment_elems, p.avg);
}

// 2(n-1) messages, 2(n-1)/n of the bytes moved, (n-1)/n reduced.
double ringCost(int n, double b, const CostParams& c) {
  double f = static_cast<double>(n - 1) / n;
  return 2 * (n - 1) * c.alpha + 2 * f * b * c.beta + f * b * c.gamma;
}

const AlgorithmInfo kAllreduce[] = {
    {"ring", Collective::kAllreduce, ring, ringCost,
     "reduce-scatter then allgather around a ring, segmented and pipelined"},
};

}  // namespace

std::span<const AlgorithmInfo> allreduceAlgorithms() { return kAllreduce; }

}  // namespace ccscope::collectives
