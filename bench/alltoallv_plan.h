// Per-pair sizes for all-to-allv: uniform, skewed (Zipf-like by destination), mixture-of-experts
// routing (tokens to TOPK of EXPERTS experts, uneven as real routers are), or a file. Every rank
// derives the same matrix from the same spec, so no exchange is needed.
#pragma once

#include <cstdint>
#include <string>

#include "collectives/collective.h"
#include "core/status.h"

namespace ccscope::bench {

struct AlltoallvSpec {
  enum class Kind { kUniform, kSkewed, kMoe, kFile } kind = Kind::kUniform;
  double alpha = 1.0;  // skewed: weight of destination d ~ 1 / (1 + d')^alpha
  int experts = 8, topk = 2;
  std::string path;    // file: ranks x ranks whitespace-separated relative weights
  std::string text;    // as given, for reports
};

core::Result<AlltoallvSpec> parseAlltoallvSpec(const std::string& s);
// Each rank sends `count` elements in total (rounded per pair), split by the spec's weights.
core::Result<collectives::AlltoallvPlan> makeAlltoallvPlan(const AlltoallvSpec& spec, int ranks,
                                                           uint64_t count);

}  // namespace ccscope::bench
