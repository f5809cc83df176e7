// The harness's own collectives (barriers between timed iterations, statistics reductions, the
// end-of-sweep sums) on a host channel apart from the transport under test: a device or verbs
// transport must not carry our bookkeeping, and a barrier must never alias a collective's tag.
// The rank job connects a host transport (shm or tcp, bootstrap scope "harness/") and hands it
// over; probes and tests that have only the measured transport share it (tag channel 1).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "collectives/executor.h"
#include "collectives/schedule.h"
#include "core/deadline.h"
#include "core/flight_record.h"
#include "core/host_memory.h"
#include "core/status.h"
#include "transports/transport.h"

namespace ccscope::collectives {

class HarnessChannel {
 public:
  // Over a connected host transport of its own, which it keeps.
  static core::Result<std::unique_ptr<HarnessChannel>> create(
      std::unique_ptr<transports::Transport> own);
  // Over a transport someone else owns and also measures on (it must outlive the channel).
  static core::Result<std::unique_ptr<HarnessChannel>> sharing(transports::Transport& t);
  ~HarnessChannel();
  HarnessChannel(const HarnessChannel&) = delete;
  HarnessChannel& operator=(const HarnessChannel&) = delete;

  core::Status barrier(core::Deadline deadline);
  // Elementwise over all ranks, in place; every rank passes the same length.
  core::Status maxDoubles(std::span<double> values, core::Deadline deadline);
  core::Status sumInts(std::span<int64_t> values, core::Deadline deadline);
  // Barriers and reductions are recorded here (nullptr: not recorded): a hang in one must show
  // whom each rank waits on, as one in a measured run does.
  void setFlightRecorder(core::FlightRecorder* r) { recorder_ = r; }
  // Whether the channel has a transport of its own (false: it shares the measured one).
  bool separate() const { return own_ != nullptr; }
  const char* transportName() const { return t_.name(); }

 private:
  HarnessChannel(transports::Transport& t, std::unique_ptr<transports::Transport> own);
  core::Status init();
  core::Status allreduce(void* data, size_t count, core::DataType dt, core::ReduceOp op,
                         core::Deadline deadline);
  core::Status runRecorded(Executor& ex, const Buffers& b, const char* op, const char* algo,
                           const char* dtype, uint64_t bytes, core::Deadline deadline);

  std::unique_ptr<transports::Transport> own_;  // first: it outlives the registration below
  transports::Transport& t_;
  core::FlightRecorder* recorder_ = nullptr;
  core::HostBuffer aux_;
  transports::Registration aux_reg_;
  Schedule barrier_sched_;
  Executor barrier_exec_;  // prepared once: barriers sit between timed iterations
  Schedule reduce_sched_;
  uint64_t reduce_count_ = UINT64_MAX;  // what reduce_sched_ was built for (none yet)
  Executor reduce_exec_;
};

}  // namespace ccscope::collectives
