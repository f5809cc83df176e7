// Per-pair sizes for all-to-allv: uniform, skewed towards near neighbours, mixture-of-experts
// routing (tokens to TOPK of EXPERTS experts, uneven as real routers are), or a weight matrix
// from a file. Every rank derives the same matrix from the same spec, so no exchange is needed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/collective.h"
#include "core/status.h"

namespace ccscope::bench {

struct AlltoallvSpec {
  enum class Kind { kUniform, kSkewed, kMoe, kFile } kind = Kind::kUniform;
  double alpha = 1.0;  // skewed: weight of destination d from s ~ 1 / (1 + (d - s) mod n)^alpha
  int experts = 8, topk = 2;
  std::string path;  // file: ranks x ranks whitespace-separated non-negative weights
  std::string text;  // as given, for reports
};

// uniform | skewed:ALPHA | moe:EXPERTS,TOPK | file:PATH
core::Result<AlltoallvSpec> parseAlltoallvSpec(const std::string& s);

// Each rank sends exactly `count` elements in total, split in proportion to its row of weights
// (largest remainder, ties to the lower destination). A file is read and shape-checked here,
// where the rank count is known.
core::Result<collectives::AlltoallvPlan> makeAlltoallvPlan(const AlltoallvSpec& spec, int ranks,
                                                           uint64_t count);

// Row s of the weights for the generated kinds (exposed for tests): skewed and moe.
std::vector<double> skewedWeights(double alpha, int ranks, int src);
// Mixture of experts: see alltoallv_plan.cc for the routing model.
std::vector<double> moeWeights(int experts, int topk, int ranks, int src);
// Splits `count` in proportion to `weights` (not all zero) so the parts sum to count.
std::vector<uint64_t> apportion(const std::vector<double>& weights, uint64_t count);

}  // namespace ccscope::bench
