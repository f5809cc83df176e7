// One descriptor per collective (as nccl-tests has one file per collective): its bus-bandwidth
// factor and how to fill and check its data. The sweep driver is shared.
#pragma once

#include <cstdint>

#include "collectives/collective_backend.h"
#include "core/dtype.h"

namespace ccscope::bench {

struct CollectiveDesc {
  collectives::Collective collective;
  // busbw = algbw * factor(n): nccl-tests' definitions, so numbers compare.
  double (*busbw_factor)(int ranks);
  void (*fill)(core::DataType, core::ReduceOp, int rank, int ranks, uint64_t count, void* buf);
  int64_t (*count_wrong)(core::DataType, core::ReduceOp, int ranks, uint64_t count, const void* out);
};

const CollectiveDesc& describe(collectives::Collective c);

}  // namespace ccscope::bench
