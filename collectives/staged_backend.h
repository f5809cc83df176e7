// Device buffers over a transport that moves host memory only (shm, tcp): the harness sees
// buffers on the GPU; the host backend underneath works on its own buffers, pinned; every run
// copies the input range down to them and the output range back up, so the time includes both
// copies (what a GPU-unaware fabric costs). Vendor-free: the copies go through DeviceRuntime.
#pragma once

#include <memory>

#include "collectives/collective_backend.h"
#include "collectives/device_runtime.h"

namespace ccscope::collectives {

std::unique_ptr<CollectiveBackend> stagedBackend(std::unique_ptr<CollectiveBackend> host,
                                                 DeviceRuntime& device);

}  // namespace ccscope::collectives
