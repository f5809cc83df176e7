// BufferData for device buffers: bench/cuda/'s kernels on the rank's stream, waited for before
// the collective runs (peers read the buffers from their own streams).
#pragma once

#include <memory>

#include "bench/buffer_data.h"

namespace ccscope::bench::device {

std::unique_ptr<BufferData> cudaBufferData(collectives::DeviceRuntime& device);

}  // namespace ccscope::bench::device
