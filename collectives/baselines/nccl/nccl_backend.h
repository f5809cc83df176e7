// `--algo native --transport nccl`: NCCL's own collectives (ncclAllReduce, ...) on the nccl
// transport's communicator and stream, behind the CollectiveBackend interface, so one table
// compares our schedules over ncclSend/ncclRecv with NCCL's choice.
#pragma once

#include <memory>

#include "collectives/collective_backend.h"
#include "collectives/harness_channel.h"
#include "transports/transport.h"

namespace ccscope::collectives::nccl {

// How the buffers are registered with the communicator (nccl-tests' -R): none; local
// (ncclCommRegister); symmetric (ncclMemAlloc and ncclCommWindowRegister, NCCL 2.27 on).
enum class Registration { kNone = 0, kLocal = 1, kSymmetric = 2 };

// `t` must be a connected nccl transport and `device` the GPU its stream runs on; both, and
// `harness` (barriers and statistics), outlive the backend.
core::Result<std::unique_ptr<CollectiveBackend>> makeNcclBackend(transports::Transport& t,
                                                                 DeviceRuntime& device,
                                                                 HarnessChannel* harness,
                                                                 Registration reg);

}  // namespace ccscope::collectives::nccl
