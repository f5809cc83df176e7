// Verifiable data, as nccl-tests does it: inputs are small integers chosen per (rank, index, op)
// so that every reduction is exact in every dtype (no rounding anywhere), and the expected
// output is recomputed independently and compared bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace ccscope::bench {

// Writes rank `rank`'s input for an allreduce of `count` elements.
void fillAllreduceInput(core::DataType t, core::ReduceOp op, int rank, int ranks, uint64_t count,
                        void* buf);
// Number of elements of `out` that differ from the exact allreduce result.
int64_t countAllreduceWrong(core::DataType t, core::ReduceOp op, int ranks, uint64_t count,
                            const void* out);

}  // namespace ccscope::bench
