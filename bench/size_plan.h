// What each point of a sweep needs before it runs: the buffer bytes of its size (with
// all-to-allv, the largest per-rank volume of its plan) and its all-to-allv plan.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bench/bench_config.h"
#include "collectives/collective.h"
#include "core/status.h"

namespace ccscope::bench {

struct SizePlan {
  uint64_t bytes;    // requested size
  size_t max_bytes;  // largest buffer any rank needs for it
};

core::Result<std::vector<SizePlan>> planSizes(const BenchConfig& cfg,
                                              const std::vector<uint64_t>& sizes, int ranks);
size_t largestBuffer(const std::vector<SizePlan>& plans);
// The all-to-allv plan of one point, or none for the other collectives.
core::Result<std::unique_ptr<collectives::AlltoallvPlan>> alltoallvPlan(const BenchConfig& cfg,
                                                                        int ranks, uint64_t count);

}  // namespace ccscope::bench
