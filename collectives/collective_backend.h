// CollectiveBackend: what the harness drives. Our schedules over a transport, and the vendor
// libraries' own collectives (MPI, NCCL) as baselines, sit behind this one interface so every
// number comes out of the same harness in the same format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "collectives/collective.h"
#include "collectives/device_runtime.h"
#include "core/deadline.h"
#include "core/dtype.h"
#include "core/flight_record.h"
#include "core/host_memory.h"
#include "core/status.h"

namespace ccscope::collectives {

struct OpConfig {
  Collective collective = Collective::kAllreduce;
  uint64_t count = 0;  // the collective's count (collective.h), already rounded
  core::DataType dtype = core::DataType::kFloat;
  core::ReduceOp op = core::ReduceOp::kSum;
  int root = 0;
  const AlltoallvPlan* plan = nullptr;  // all-to-allv only; outlives the prepared op
};

class CollectiveBackend {
 public:
  virtual ~CollectiveBackend() = default;
  virtual std::string algorithm() const = 0;
  // The algorithm the current prepare() picked ("auto" picks per size) and why.
  virtual std::string chosenAlgorithm() const { return algorithm(); }
  virtual std::string choiceNote() const { return ""; }
  // What setting the backend up measured, for the table ("" if nothing): auto's calibration.
  virtual std::string setupNote() const { return ""; }
  virtual std::string transport() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Allocates (and registers) send and receive buffers of max_bytes each, once per sweep, on
  // the pages asked for where the buffers are host memory.
  virtual core::Status allocate(size_t max_bytes, core::HostPages pages) = 0;
  // Instead of allocate(): take `other`'s send and receive buffers (at least max_bytes each).
  // The backends of one sweep take turns and never run at once, so with several algorithms
  // they share one pair, and each algorithm runs on the same pages. One pair each would hold
  // gigabytes at 8 ranks and 64 MiB, which a VM's host takes back after the run in whole-VM
  // freezes (docs/performance.md, "Measuring on small shared machines"). False where this
  // backend cannot share them (another kind of memory, another transport): the caller then
  // calls allocate().
  virtual bool shareBuffers(CollectiveBackend& /*other*/, size_t /*max_bytes*/) { return false; }
  // After allocate(): "" or one line the table shows above the figures (huge pages asked for
  // and not granted).
  virtual std::string allocationNote() const { return ""; }
  virtual char* sendBuffer() = 0;
  virtual char* recvBuffer() = 0;
  // The GPU the buffers live on; nullptr for host buffers. The harness fills and checks device
  // buffers with kernels there, and times on its stream as well as on the host clock.
  virtual DeviceRuntime* device() { return nullptr; }
  // How the transport moves the buffers: "host", "device" (device to device) or "staged"
  // (device buffers through pinned host buffers, for a transport that moves host memory only).
  virtual std::string dataPath() const { return "host"; }
  // The pipeline segment the last prepare() cut the schedule into, in bytes; 0: not segmented.
  virtual uint64_t segmentBytes() const { return 0; }
  // Outside the timed region: build the schedule / plan for one size, dtype, op.
  virtual core::Status prepare(const OpConfig& cfg) = 0;
  // One collective. In place: input and output live in the receive buffer at the offsets of
  // geometry(); out of place, input is the send buffer and output the receive buffer.
  virtual core::Status run(bool in_place, core::Deadline deadline) = 0;
  // CUDA-graph mode (bench -G): whether run()'s work can be captured from the device's stream.
  // enqueue() then puts one collective on the stream without waiting (a failure inside a capture
  // is only reported: the backend fails for good at its next call), and drain() waits until
  // `passed` says the stream reached a point, under `deadline` (a failure aborts as run()'s).
  virtual bool capturable() const { return false; }
  virtual core::Status enqueue(bool /*in_place*/, core::Deadline /*deadline*/) {
    return core::Status(core::Code::kUnsupported,
                        "this backend's collectives cannot be captured into a CUDA graph");
  }
  virtual core::Status drain(core::Deadline /*deadline*/,
                             const std::function<core::Result<bool>()>& /*passed*/) {
    return core::Status::ok();
  }
  virtual core::Status barrier(core::Deadline deadline) = 0;
  // Cross-rank reductions for the harness's own statistics (never timed).
  virtual core::Status maxDoubles(std::span<double> values, core::Deadline deadline) = 0;
  virtual core::Status sumInts(std::span<int64_t> values, core::Deadline deadline) = 0;
  // Test-only fault injection (see bench's CCSCOPE_TESTONLY_* switches).
  virtual void corruptNextResult() {}
  // Every run, barrier and statistics reduction is recorded here (nullptr: not recorded).
  virtual void setFlightRecorder(core::FlightRecorder* r) { recorder_ = r; }

 protected:
  core::FlightRecorder* recorder_ = nullptr;
};

}  // namespace ccscope::collectives
