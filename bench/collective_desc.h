// One descriptor per collective (as nccl-tests has one file per collective): what its reported
// size means (the bus-bandwidth factor is collectives::busbwFactor). Filling and checking data is
// data-driven through check_data.h; the sweep driver is shared.
#pragma once

#include <cstdint>

#include "collectives/collective.h"

namespace ccscope::bench {

struct CollectiveDesc {
  collectives::Collective collective;
  const char* size_meaning;  // for docs/metrics.md and --help
};

const CollectiveDesc& describe(collectives::Collective c);

}  // namespace ccscope::bench
