// Fills and checks the harness's buffers where they live: host memory directly (check_data.h),
// device memory with kernels on its GPU, so a check never copies a whole buffer back.
#pragma once

#include <cstdint>
#include <memory>

#include "bench/check_data.h"
#include "collectives/device_runtime.h"
#include "core/status.h"

namespace ccscope::bench {

class BufferData {
 public:
  virtual ~BufferData() = default;
  virtual core::Status fillInput(const CheckContext& c, void* in) = 0;
  virtual core::Status poison(const CheckContext& c, void* buf, uint64_t elems) = 0;
  virtual core::Result<int64_t> countWrong(const CheckContext& c, const void* out) = 0;
};

// Host buffers: check_data.h's functions.
BufferData& hostBufferData();

// Makes the BufferData of a backend's GPU (bench/device/ has the CUDA one).
using DeviceDataFactory = std::unique_ptr<BufferData> (*)(collectives::DeviceRuntime& device);

}  // namespace ccscope::bench
