// One descriptor per collective (as nccl-tests has one file per collective): its bus-bandwidth
// factor and what its reported size means. Filling and checking data is data-driven through
// check_data.h; the sweep driver is shared.
#pragma once

#include <cstdint>

#include "collectives/collective.h"

namespace ccscope::bench {

struct CollectiveDesc {
  collectives::Collective collective;
  // busbw = algbw * factor(n): nccl-tests' definitions, so numbers compare.
  double (*busbw_factor)(int ranks);
  const char* size_meaning;  // for docs/metrics.md and --help
};

const CollectiveDesc& describe(collectives::Collective c);

}  // namespace ccscope::bench
