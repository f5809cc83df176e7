#include "bench/alltoallv_plan.h"

#include <fmt/format.h>

#include "collectives/schedule.h"

namespace ccscope::bench {

using core::Code;
using core::Status;

core::Result<AlltoallvSpec> parseAlltoallvSpec(const std::string& s) {
  AlltoallvSpec spec;
  spec.text = s;
  if (s == "uniform") return spec;
  return Status(Code::kInvalidArgument,
                fmt::format("unknown --a2av '{}' (uniform, skewed:ALPHA, moe:EXPERTS,TOPK, file:PATH)", s));
}

core::Result<collectives::AlltoallvPlan> makeAlltoallvPlan(const AlltoallvSpec& spec, int ranks,
                                                           uint64_t count) {
  collectives::AlltoallvPlan plan;
  plan.ranks = ranks;
  plan.matrix.assign(static_cast<size_t>(ranks) * ranks, 0);
  if (spec.kind != AlltoallvSpec::Kind::kUniform)
    return Status(Code::kUnsupported, "only uniform all-to-allv plans so far");
  for (int s = 0; s < ranks; ++s)
    for (int d = 0; d < ranks; ++d)
      plan.matrix[static_cast<size_t>(s) * ranks + d] =
          collectives::partOffset(count, ranks, d + 1) - collectives::partOffset(count, ranks, d);
  return plan;
}

}  // namespace ccscope::bench
