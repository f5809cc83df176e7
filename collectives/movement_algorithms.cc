// Registry rows of the data-movement collectives (allgather, reduce-scatter, all-to-all(v),
// broadcast, sendrecv) and their alpha-beta-gamma costs. `b` is the collective's size in bytes
// (nccl-tests' count times the element size: the larger buffer; all-to-allv: the largest
// per-rank volume). Local copies are charged gamma per byte, like a reduction: both are
// memory-bound passes over the data. Pipeline segments are not modelled (one message per step).
#include <bit>
#include <cmath>

#include "collectives/algorithms.h"
#include "collectives/movement_schedules.h"

namespace ccscope::collectives {

namespace {

double frac(int n) { return static_cast<double>(n - 1) / n; }
double log2Ceil(int n) { return n > 1 ? std::ceil(std::log2(n)) : 0.0; }
bool powerOfTwo(int n) { return std::has_single_bit(static_cast<unsigned>(n)); }

// --- allgather: every rank receives (n-1)/n of b.
double ringAllgatherCost(int n, double b, const CostParams& c) {
  return (n - 1) * c.alpha + frac(n) * b * c.beta;
}
// Bruck adds the rotation: a copy of the whole output through scratch.
double bruckAllgatherCost(int n, double b, const CostParams& c) {
  return log2Ceil(n) * c.alpha + frac(n) * b * c.beta + (n > 1 ? 2 * b * c.gamma : 0.0);
}
double recursiveDoublingAllgatherCost(int n, double b, const CostParams& c) {
  if (!powerOfTwo(n)) return bruckAllgatherCost(n, b, c);
  return log2Ceil(n) * c.alpha + frac(n) * b * c.beta;
}

// --- reduce-scatter: (n-1)/n of b moved and reduced.
double ringReduceScatterCost(int n, double b, const CostParams& c) {
  return (n - 1) * c.alpha + frac(n) * b * (c.beta + c.gamma);
}
// The fold (n not a power of two) moves and reduces all of b once more, and returns a block.
double recursiveHalvingReduceScatterCost(int n, double b, const CostParams& c) {
  const int p = n > 0 ? static_cast<int>(std::bit_floor(static_cast<unsigned>(n))) : 1;
  double t = log2Ceil(p) * c.alpha + frac(p) * b * (c.beta + c.gamma);
  if (p != n) t += 2 * c.alpha + b * (c.beta + c.gamma) + b / n * c.beta;
  return t;
}

// --- broadcast: b reaches every rank.
// The chain runs as a pipeline of m segments (the harness cuts about 2n): n-2+m stages.
double chainBroadcastCost(int n, double b, const CostParams& c) {
  if (n < 2) return b * c.gamma;
  const double m = 2.0 * n;
  return (n - 2 + m) * (c.alpha + b / m * c.beta);
}
// The root (and each inner node) sends the whole message once per child.
double binomialBroadcastCost(int n, double b, const CostParams& c) {
  return log2Ceil(n) * (c.alpha + b * c.beta);
}
// Scatter: log n steps, (n-1)/n b; ring allgather: n-1 steps, (n-1)/n b.
double scatterAllgatherBroadcastCost(int n, double b, const CostParams& c) {
  return (log2Ceil(n) + n - 1) * c.alpha + 2 * frac(n) * b * c.beta;
}

double directSendrecvCost(int n, double b, const CostParams& c) {
  return n > 1 ? c.alpha + b * c.beta : b * c.gamma;
}

// --- all-to-all(v): each rank sends (n-1)/n of b.
double pairwiseAlltoallCost(int n, double b, const CostParams& c) {
  return (n - 1) * c.alpha + frac(n) * b * c.beta;
}
// Up to W messages overlap their latency.
double linearAlltoallCost(int n, double b, const CostParams& c) {
  return std::ceil((n - 1) / static_cast<double>(kLinearWindow)) * c.alpha + frac(n) * b * c.beta;
}
// Each step sends about half of b; packing, unpacking and the rotations copy it locally.
double bruckAlltoallCost(int n, double b, const CostParams& c) {
  const double steps = log2Ceil(n);
  return steps * (c.alpha + b / 2 * c.beta) + (steps + 2) * b * c.gamma;
}

const AlgorithmInfo kMovement[] = {
    {"ring", Collective::kAllgather, ringAllgatherSchedule, ringAllgatherCost,
     "n-1 steps around a ring, each block forwarded segment by segment"},
    {"recursive_doubling", Collective::kAllgather, recursiveDoublingAllgatherSchedule,
     recursiveDoublingAllgatherCost,
     "log2 n exchanges of doubling size with rank r^d (Bruck when n is not a power of two)"},
    {"bruck", Collective::kAllgather, bruckAllgatherSchedule, bruckAllgatherCost,
     "ceil(log2 n) steps on a rotated copy in scratch, any rank count"},
    {"ring", Collective::kReduceScatter, ringReduceScatterSchedule, ringReduceScatterCost,
     "n-1 pipelined steps around a ring, partial sums double-buffered"},
    {"recursive_halving", Collective::kReduceScatter, recursiveHalvingReduceScatterSchedule,
     recursiveHalvingReduceScatterCost,
     "log2 p halving exchanges, pairwise fold when n is not a power of two"},
    {"chain", Collective::kBroadcast, chainBroadcastSchedule, chainBroadcastCost,
     "pipelined chain from the root, in segments"},
    {"binomial", Collective::kBroadcast, binomialBroadcastSchedule, binomialBroadcastCost,
     "segmented binomial tree from the root"},
    {"scatter_allgather", Collective::kBroadcast, scatterAllgatherBroadcastSchedule,
     scatterAllgatherBroadcastCost, "binomial scatter of n pieces, then a ring allgather"},
    {"direct", Collective::kSendrecv, directSendrecvSchedule, directSendrecvCost,
     "one send to r+1 and one receive from r-1"},
    {"pairwise", Collective::kAlltoall, pairwiseAlltoallSchedule, pairwiseAlltoallCost,
     "n-1 steps: send to r+k, receive from r-k"},
    {"bruck", Collective::kAlltoall, bruckAlltoallSchedule, bruckAlltoallCost,
     "ceil(log2 n) packed exchanges through scratch, for small blocks"},
    {"linear", Collective::kAlltoall, linearAlltoallSchedule, linearAlltoallCost,
     "all messages posted at once, at most 8 in flight per direction"},
    {"pairwise", Collective::kAlltoallv, pairwiseAlltoallvSchedule, pairwiseAlltoallCost,
     "n-1 steps: send to r+k, receive from r-k; empty blocks skipped"},
    {"linear", Collective::kAlltoallv, linearAlltoallvSchedule, linearAlltoallCost,
     "all messages posted at once, at most 8 in flight per direction; empty blocks skipped"},
};

}  // namespace

std::span<const AlgorithmInfo> movementAlgorithms() { return kMovement; }

}  // namespace ccscope::collectives
