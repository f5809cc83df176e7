// Every option of `ccscope bench`, in one struct passed by const& (no globals).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/collective_backend.h"
#include "core/dtype.h"
#include "core/host_memory.h"
#include "core/status.h"

namespace ccscope::bench {

struct BenchConfig {
  collectives::Collective collective = collectives::Collective::kAllreduce;
  std::vector<std::string> algorithms{"ring"};
  bool interleave = false;  // several algorithms take turns at each size (else one sweep each)
  // With several backends, which takes the first turn at the first point (and the last turn of
  // its second leg); each later point starts one further on. -1: drawn per run (rank 0's clock,
  // shared), so no algorithm is always first or last.
  int64_t first_turn = -1;
  std::string transport = "shm";
  // --device host|cuda: where the buffers are. With cuda each rank takes the GPU of its local
  // rank (modulo gpus_per_node when set, else modulo the GPUs it sees).
  std::string device = "host";
  int gpus_per_node = 0;
  // -R (nccl-tests' letter): NCCL's buffers for --algo native over nccl are 0 not registered,
  // 1 registered locally (ncclCommRegister), 2 symmetric windows (ncclCommWindowRegister).
  int nccl_register = 0;
  // -G N (nccl-tests' letter): the timed back-to-back iterations of each leg captured into one
  // CUDA graph, launched N times; checked runs come out of a graph too. 0: no graphs.
  int graph_launches = 0;
  // -z (nccl-tests' letter): 2 waits for each back-to-back iteration before the next (every
  // backend); 0 enqueues a leg's iterations without waiting between them and waits once at the
  // end (nccl-tests' default; backends that can enqueue, i.e. --algo native).
  int blocking = 2;
  uint64_t min_bytes = 8;
  uint64_t max_bytes = 64ull << 20;
  double factor = 2;  // multiplicative step (-f)
  uint64_t step = 0;  // additive step (-i); wins over factor when non-zero
  int iters = 20;
  int warmup = 5;
  int checks = 1;  // checked runs per size and placement; 0 disables checking
  // --placement both|out|in: which of the out-of-place and in-place rows to measure.
  bool out_of_place = true;
  bool in_place = true;
  std::vector<core::DataType> dtypes{core::DataType::kFloat};
  std::vector<core::ReduceOp> ops{core::ReduceOp::kSum};
  double timeout_s = 60;  // per collective operation
  size_t segment_bytes = 0;
  core::HostPages host_pages = core::HostPages::kHuge;  // --hugepages on|off
  int root = 0;                                         // broadcast
  std::string a2av = "uniform";                         // all-to-allv traffic (alltoallv_plan.h)
  // Test-only: CCSCOPE_TESTONLY_CORRUPT_RANK=r flips one output element of rank r per size.
  int corrupt_rank = -1;
  // Test-only: CCSCOPE_TESTONLY_MISMATCH=r:skip makes rank r skip one collective at the second
  // size; r:count makes it use a larger count there (ranks disagree on the collective).
  int mismatch_rank = -1;
  std::string mismatch_kind;
};

// Message sizes of the sweep, in bytes (before rounding to whole elements).
std::vector<uint64_t> sweepSizes(const BenchConfig& cfg);
// -b/-e/-f/-i consistency; errors are usage errors.
core::Status validate(const BenchConfig& cfg);

}  // namespace ccscope::bench
