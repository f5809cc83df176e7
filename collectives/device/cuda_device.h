// The CUDA implementation of DeviceRuntime: the GPU a rank selects, its stream, and the
// reduction kernels of collectives/cuda/ as a compute backend. No CUDA header here: app/
// includes it.
#pragma once

#include <memory>

#include "collectives/collective_backend.h"
#include "collectives/device_runtime.h"
#include "core/status.h"

namespace ccscope::collectives::device {

// OK when this process can use a GPU; else kUnavailable (exit 5) with CUDA's own reason
// ("cudaGetDeviceCount: no CUDA-capable device is detected (cudaErrorNoDevice 100)").
core::Status cudaUsable();

// The GPU of local rank `local_rank`: local_rank % gpus_per_node when gpus_per_node > 0, else
// local_rank % (the GPUs CUDA_VISIBLE_DEVICES leaves). Several ranks may share one GPU.
core::Result<std::unique_ptr<DeviceRuntime>> openCudaDevice(int local_rank, int gpus_per_node);

}  // namespace ccscope::collectives::device
