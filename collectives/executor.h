// The one executor: runs any Schedule over any Transport, local steps on a ComputeBackend.
// prepare() sizes every array once; run() allocates nothing (after its first call on a
// transport), posts each pair's messages in schedule order, at most Transport::inflightPerPeer()
// per peer and direction, starts local steps as soon as their inputs are there, and takes
// finished requests from the transport's finished list, waiting (spin, then block) only when
// nothing is ready.
//
// Two modes. Host-driven (the default): a step's dependents become ready when it finished.
// Stream-ordered (Capabilities::stream_ordered, with a stream-ordered compute backend): they
// become ready when it was enqueued, since the stream runs steps in order; the run then waits
// once, at the end, for everything it enqueued. The posts of one pass form one batch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/compute.h"
#include "collectives/schedule.h"
#include "core/deadline.h"
#include "core/dtype.h"
#include "core/flight_record.h"
#include "core/status.h"
#include "transports/transport.h"

namespace ccscope::collectives {

// Views of registered memory; a Span's offsets are checked against them.
struct Buffers {
  transports::MemoryRegion input, output, scratch;
};

class Executor {
 public:
  // Binds a schedule (kept by reference: it must outlive the executor's use of it).
  // `channel` separates independent executors' messages (0: the measured collective, 1: the
  // harness's own barriers and statistics) in the tags.
  void prepare(const Schedule& s, core::DataType dtype, core::ReduceOp op, uint32_t channel = 0);
  // Local steps on `c` (nullptr: the CPU). Kept by pointer: it must outlive the executor's use.
  void setCompute(ComputeBackend* c) { compute_ = c ? c : &cpu_; }
  // Runs the bound schedule once. The deadline covers the whole collective. When `fe` is given,
  // progress (ops done, the peer waited on, bytes moved) is written into it as it happens. On
  // failure every request still posted is cancelled: the buffers are the caller's on return.
  core::Status run(transports::Transport& t, const Buffers& bufs, core::Deadline deadline,
                   core::FlightEntry* fe = nullptr);
  // run(), in `rec` when there is one (nullptr: not recorded). `op`, `algo` and `dtype` must be
  // static strings: records may outlive the caller.
  core::Status runRecorded(transports::Transport& t, const Buffers& bufs, core::Deadline deadline,
                           core::FlightRecorder* rec, const char* op, const char* algo,
                           const char* dtype, uint64_t bytes);
  size_t opCount() const { return sched_ ? sched_->ops.size() : 0; }
  // Test-only fault injection: after the next run, flip the low bit of the first element of an
  // op that wrote this rank's output, so this rank's result is wrong (exact checks must see it).
  void corruptNextResult() { corrupt_ = true; }

 private:
  struct Run;  // the transport, buffers and deadline of one run
  core::Status begin(transports::Transport& t);
  void onReady(uint32_t op);
  void markDone(uint32_t op);
  core::Status postReadyComms(Run& r);
  core::Status postComm(Run& r, uint32_t op);
  core::Status startLocal(Run& r, uint32_t op);
  // Takes what finished from the transport's and the compute backend's lists.
  core::Status reap(Run& r);
  core::Status waitForAny(Run& r);
  core::Status drive(Run& r);
  core::Status driveInOrder(Run& r);  // stream-ordered transports
  uint32_t batchEnd(uint32_t first) const;
  // Ops the run is past: released ones, or on a stream (where release is at enqueue) finished.
  uint32_t progressed() const { return stream_ordered_ ? finished_count_ : done_; }
  // The oldest posted request that has not finished (the one the run waits behind).
  transports::Request oldestOutstanding();
  void recordStuckSend(transports::Transport& t, core::FlightEntry& fe);
  void cancelOutstanding(transports::Transport& t);
  // nullptr when the span overruns its buffer.
  char* addr(const Buffers& bufs, const Span& s, uint64_t count) const;
  const transports::MemoryRegion& region(const Buffers& bufs, Buf b) const;

  const Schedule* sched_ = nullptr;
  CpuCompute cpu_;
  ComputeBackend* compute_ = &cpu_;
  // The pairing begin() last read capabilities from and bound the compute backend for.
  const transports::Transport* bound_transport_ = nullptr;
  const ComputeBackend* bound_compute_ = nullptr;
  core::DataType dtype_ = core::DataType::kFloat;
  core::ReduceOp op_ = core::ReduceOp::kSum;
  size_t elem_ = 1;
  bool corrupt_ = false;
  bool stream_ordered_ = false;  // of the current run
  uint32_t channel_ = 0;
  uint32_t corrupt_op_ = UINT32_MAX;  // an op writing the output: its first element is flipped
  uint32_t window_ = 1;               // requests in flight per lane

  std::vector<uint32_t> remaining_;    // unmet dependencies per op
  std::vector<uint8_t> ready_;         // dependencies met (comm ops wait for their turn)
  std::vector<uint8_t> finished_;      // the op's request or local step finished
  std::vector<uint32_t> local_queue_;  // ready local ops (stack)
  // Per (peer, direction): the schedule's comm ops in order, how many were posted, how many
  // of those are in flight.
  std::vector<std::vector<uint32_t>> lanes_;
  std::vector<uint32_t> lane_of_, lane_cursor_, lane_inflight_;
  std::vector<transports::Request> req_of_op_;
  // Request slot -> op (UINT32_MAX: not ours), and the generation we posted it with.
  std::vector<uint32_t> op_of_slot_, gen_of_slot_;
  std::vector<uint32_t> posted_;  // ops in the order their requests were posted
  size_t posted_head_ = 0;        // posted_[..head) finished
  uint32_t done_ = 0;             // ops whose dependents were released
  uint32_t inflight_ = 0;         // requests posted and not finished
  uint32_t local_pending_ = 0;    // local steps started and not finished
  uint32_t finished_count_ = 0;   // requests and local steps finished
  uint64_t calls_ = 0;
};

}  // namespace ccscope::collectives
