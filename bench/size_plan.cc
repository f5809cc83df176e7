#include "bench/size_plan.h"

#include <algorithm>

#include "bench/alltoallv_plan.h"

namespace ccscope::bench {

core::Result<std::vector<SizePlan>> planSizes(const BenchConfig& cfg,
                                              const std::vector<uint64_t>& sizes, int ranks) {
  std::vector<SizePlan> out;
  for (uint64_t b : sizes) {
    size_t need = b;
    if (cfg.collective == collectives::Collective::kAlltoallv) {
      CCSCOPE_ASSIGN_OR_RETURN(AlltoallvSpec spec, parseAlltoallvSpec(cfg.a2av));
      CCSCOPE_ASSIGN_OR_RETURN(collectives::AlltoallvPlan plan, makeAlltoallvPlan(spec, ranks, b));
      need = plan.maxVolume() + size_t{64} * ranks;  // in 1-byte elements; wider types round down
    }
    out.push_back({b, need});
  }
  return out;
}

size_t largestBuffer(const std::vector<SizePlan>& plans) {
  size_t need = 0;
  for (const SizePlan& p : plans) need = std::max(need, p.max_bytes);
  return need;
}

core::Result<std::unique_ptr<collectives::AlltoallvPlan>> alltoallvPlan(const BenchConfig& cfg,
                                                                        int ranks, uint64_t count) {
  if (cfg.collective != collectives::Collective::kAlltoallv)
    return std::unique_ptr<collectives::AlltoallvPlan>();
  CCSCOPE_ASSIGN_OR_RETURN(AlltoallvSpec spec, parseAlltoallvSpec(cfg.a2av));
  CCSCOPE_ASSIGN_OR_RETURN(collectives::AlltoallvPlan p, makeAlltoallvPlan(spec, ranks, count));
  return std::make_unique<collectives::AlltoallvPlan>(std::move(p));
}

}  // namespace ccscope::bench
