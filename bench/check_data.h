// Verifiable data, as nccl-tests does it: inputs are small integers chosen per (rank, index, op)
// so every reduction is exact in every dtype (no rounding anywhere, in any order), and every
// data-movement collective's source element is identifiable at its destination. The expected
// output is recomputed independently and compared bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench/check_values.h"
#include "collectives/collective.h"
#include "core/dtype.h"

namespace ccscope::bench {

struct CheckContext {
  collectives::Collective collective = collectives::Collective::kAllreduce;
  core::DataType dtype = core::DataType::kFloat;
  core::ReduceOp op = core::ReduceOp::kSum;
  int rank = 0;
  int ranks = 1;
  uint64_t count = 0;  // the collective's count (collective.h)
  int root = 0;
  const collectives::AlltoallvPlan* plan = nullptr;
};

// This rank's all-to-allv offsets in ValueContext's form (ranks + 1 entries each): what a
// caller copies to the device for the GPU checks.
struct AlltoallvOffsets {
  std::vector<uint64_t> send;
  std::vector<uint64_t> recv;
};
AlltoallvOffsets alltoallvOffsets(const collectives::AlltoallvPlan& plan, int rank);

// Writes this rank's input (geometry().in_elems elements).
void fillInput(const CheckContext& c, void* in);
// Overwrites a buffer with a value no collective produces, so a run that writes nothing fails.
void poison(const CheckContext& c, void* buf, uint64_t elems);
// Elements of this rank's output (geometry().out_elems) that differ from the exact result.
int64_t countWrong(const CheckContext& c, const void* out);

// Kept for the allreduce unit tests: the same data as fillInput/countWrong for allreduce.
void fillAllreduceInput(core::DataType t, core::ReduceOp op, int rank, int ranks, uint64_t count,
                        void* buf);
int64_t countAllreduceWrong(core::DataType t, core::ReduceOp op, int ranks, uint64_t count,
                            const void* out);

}  // namespace ccscope::bench
