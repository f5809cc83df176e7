// CollectiveBackend: what the harness drives. Our schedules over a transport, and the vendor
// libraries' own collectives (MPI, NCCL) as baselines, sit behind this one interface so every
// number comes out of the same harness in the same format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/deadline.h"
#include "core/dtype.h"
#include "core/status.h"

namespace ccscope::collectives {

enum class Collective { kAllreduce };
const char* collectiveName(Collective c);
core::Result<Collective> parseCollective(const std::string& s);

struct OpConfig {
  Collective collective = Collective::kAllreduce;
  uint64_t count = 0;  // elements per rank
  core::DataType dtype = core::DataType::kFloat;
  core::ReduceOp op = core::ReduceOp::kSum;
};

class CollectiveBackend {
 public:
  virtual ~CollectiveBackend() = default;
  virtual std::string algorithm() const = 0;
  virtual std::string transport() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Allocates (and registers) send/recv buffers for up to max_bytes once per sweep.
  virtual core::Status allocate(size_t max_bytes) = 0;
  virtual char* sendBuffer() = 0;
  virtual char* recvBuffer() = 0;
  // Outside the timed region: build the schedule / plan for one size, dtype, op.
  virtual core::Status prepare(const OpConfig& cfg) = 0;
  // One collective. In place: input and output are the receive buffer.
  virtual core::Status run(bool in_place, core::Deadline deadline) = 0;
  virtual core::Status barrier(core::Deadline deadline) = 0;
  // Cross-rank reductions for the harness's own statistics (never timed).
  virtual core::Status maxDoubles(std::span<double> values, core::Deadline deadline) = 0;
  virtual core::Status sumInts(std::span<int64_t> values, core::Deadline deadline) = 0;
  // Test-only fault injection (see bench's CCSCOPE_TESTONLY_* switches).
  virtual void corruptNextResult() {}
  // Where the collective stands, for hang reports: "collective #12 step 40 of 96".
  virtual std::string progressNote() const { return ""; }
};

}  // namespace ccscope::collectives
