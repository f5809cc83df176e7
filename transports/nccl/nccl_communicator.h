// What NCCL's own collectives (collectives/baselines/nccl/) take from a connected nccl transport:
// its communicator and stream, and one way to run calls on them under our deadline, so that the
// baseline and our schedules share one communicator, one abort and one diagnosis. Also the
// helpers the transport's files share: the unique id's exchange, its table line, NCCL's errors.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>
#include <string>

#include "core/deadline.h"
#include "core/status.h"
#include "launch/bootstrap.h"
#include "transports/common/nccl_version.h"
#include "transports/transport.h"

namespace ccscope::transports {

class NcclCommunicator {
 public:
  virtual ~NcclCommunicator() = default;
  virtual ncclComm_t comm() const = 0;
  virtual cudaStream_t stream() const = 0;
  // Calls `enqueue` (NCCL calls on comm() and stream()) inside one group, then polls until the
  // group is enqueued and, with `wait`, until the stream has passed it, watching NCCL's
  // asynchronous error. A failure, or `deadline` passing first, aborts the communicator (every
  // later call fails). Without `wait` it may run inside a CUDA-graph capture of the stream: a
  // failure is then returned, and the abort waits for the next call (or close), after the
  // capture ended.
  virtual core::Status runGroup(const char* call, const std::function<ncclResult_t()>& enqueue,
                                core::Deadline deadline, bool wait = true) = 0;
  // Polls until `passed` says the stream reached a point (NCCL's errors watched, an abort on
  // failure or at the deadline).
  virtual core::Status waitUntil(const char* call,
                                 const std::function<core::Result<bool>()>& passed,
                                 core::Deadline deadline) = 0;
  // A collective call outside any stream work (window registration): polled until it settles.
  virtual core::Status settleCall(const char* call, ncclResult_t r, core::Deadline deadline) = 0;
  // Whether the communicator was aborted (a failure, a cancel, a dead peer).
  virtual bool failed() const = 0;
};

// The communicator behind `t`; nullptr unless t is a connected nccl transport.
NcclCommunicator* ncclCommunicator(Transport& t);

// The unique id through the bootstrap: `root` makes and publishes it, the others read it.
core::Status exchangeUniqueId(launch::Bootstrap& bs, const std::string& key, bool root,
                              core::Deadline deadline, ncclUniqueId& id);

// The line above the table: the NCCL loaded and built against, the GPU, every NCCL_* variable.
std::string ncclSetupNote(int device);

// NCCL's error as a Status: the call, NCCL's text and name, and its last message.
core::Status ncclStatus(const char* call, ncclResult_t r, ncclComm_t comm);

}  // namespace ccscope::transports
