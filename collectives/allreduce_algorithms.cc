// The allreduce algorithms: registry rows and their alpha-beta-gamma costs (S = bytes, n ranks,
// p = 2^floor(log2 n), a message of b bytes costs alpha + beta*b, reducing b bytes gamma*b).
// Costs model unsegmented phases except the tree, whose whole point is the pipeline.
#include <algorithm>
#include <cmath>

#include "collectives/algorithms.h"
#include "collectives/allreduce_schedules.h"
#include "collectives/power_of_two_fold.h"

namespace ccscope::collectives {

namespace {

// Mirrors the backend's default segment (half a ring chunk, 64 KiB to 1 MiB); the tree's
// pipeline depth depends on it.
constexpr double kMinSegmentBytes = 64.0 * 1024;
constexpr double kMaxSegmentBytes = 1024.0 * 1024;

Schedule ring(const ScheduleParams& p) {
  return ringAllreduceSchedule(p.rank, p.ranks, p.count, p.segment_elems, p.avg);
}
Schedule recursiveDoubling(const ScheduleParams& p) {
  return recursiveDoublingAllreduceSchedule(p.rank, p.ranks, p.count, p.segment_elems, p.avg);
}
Schedule rabenseifner(const ScheduleParams& p) {
  return rabenseifnerAllreduceSchedule(p.rank, p.ranks, p.count, p.segment_elems, p.avg);
}
Schedule tree(const ScheduleParams& p) {
  return treeAllreduceSchedule(p.rank, p.ranks, p.count, p.segment_elems, p.avg);
}

// 2(n-1) messages, 2(n-1)/n of the bytes moved, (n-1)/n reduced.
double ringCost(int n, double b, const CostParams& c) {
  double f = static_cast<double>(n - 1) / n;
  return 2 * (n - 1) * c.alpha + 2 * f * b * c.beta + f * b * c.gamma;
}

// n != p: the extra ranks' input goes in (alpha + S beta, reduced: S gamma) and the result
// comes back out (alpha + S beta).
double foldCost(int n, double b, const CostParams& c) {
  return PowerOfTwoFold(n).rem == 0 ? 0.0 : 2 * c.alpha + 2 * b * c.beta + b * c.gamma;
}

// log2(p) rounds, each one message of the whole buffer and one reduction of it.
double recursiveDoublingCost(int n, double b, const CostParams& c) {
  return PowerOfTwoFold(n).rounds * (c.alpha + b * c.beta + b * c.gamma) + foldCost(n, b, c);
}

// 2 log2(p) messages; 2(p-1)/p of the bytes moved, (p-1)/p reduced.
double rabenseifnerCost(int n, double b, const CostParams& c) {
  const PowerOfTwoFold f(n);
  double frac = static_cast<double>(f.pof2 - 1) / f.pof2;
  return 2 * f.rounds * c.alpha + 2 * frac * b * c.beta + frac * b * c.gamma + foldCost(n, b, c);
}

// Each tree moves H = S/2 in k = ceil(H/s) segments of s bytes over d = ceil(log2 n) levels up
// and d down. Filling and draining the pipeline takes 2d hops of one segment (the d upward ones
// also reduce it); in steady state a rank sends ~4 segments (up and two down in its interior
// tree, up in its leaf tree) and reduces 2 per tick, so k-1 more ticks cost 4s beta + 2s gamma:
//   (2d + k - 1) alpha + (2d + 4(k-1)) s beta + (d + 2(k-1)) s gamma  ->  2S beta + S gamma.
double treeCost(int n, double b, const CostParams& c) {
  if (n < 2 || b <= 0) return 0.0;
  const double half = b / 2;
  const double s = std::min(half, std::clamp(b / (2 * n), kMinSegmentBytes, kMaxSegmentBytes));
  const double k = std::ceil(half / s), d = std::ceil(std::log2(n));
  return (2 * d + k - 1) * c.alpha + (2 * d + 4 * (k - 1)) * s * c.beta +
         (d + 2 * (k - 1)) * s * c.gamma;
}

const AlgorithmInfo kAllreduce[] = {
    {"ring", Collective::kAllreduce, ring, ringCost,
     "reduce-scatter then allgather around a ring, segmented and pipelined"},
    {"tree", Collective::kAllreduce, tree, treeCost,
     "NCCL's double binary tree: two complementary trees, each reducing and broadcasting half "
     "the buffer, segmented and pipelined"},
    {"recursive_doubling", Collective::kAllreduce, recursiveDoubling, recursiveDoublingCost,
     "log2(n) rounds of whole-buffer exchange and reduce (fold for non-powers of two)"},
    {"rabenseifner", Collective::kAllreduce, rabenseifner, rabenseifnerCost,
     "recursive-halving reduce-scatter then recursive-doubling allgather (fold for "
     "non-powers of two)"},
};

}  // namespace

std::span<const AlgorithmInfo> allreduceAlgorithms() { return kAllreduce; }

}  // namespace ccscope::collectives
