#include "collectives/cuda/launch_grid.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>

#include "core/cuda_status.h"

namespace ccscope::collectives::device {

namespace {

constexpr int kCachedDevices = 64;

// Multiprocessor count per device ordinal; 0 until first asked. A race only repeats the lookup.
std::array<std::atomic<int>, kCachedDevices>& smCache() {
  static std::array<std::atomic<int>, kCachedDevices> cache{};
  return cache;
}

core::Result<int> multiprocessors() {
  int dev = 0;
  CCSCOPE_CUDA_RETURN("cudaGetDevice", cudaGetDevice(&dev));
  if (dev >= 0 && dev < kCachedDevices) {
    if (int cached = smCache()[dev].load(std::memory_order_relaxed); cached > 0) return cached;
  }
  int sms = 0;
  CCSCOPE_CUDA_RETURN("cudaDeviceGetAttribute(MultiProcessorCount)",
                      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  sms = std::max(sms, 1);
  if (dev >= 0 && dev < kCachedDevices) smCache()[dev].store(sms, std::memory_order_relaxed);
  return sms;
}

}  // namespace

core::Result<LaunchGrid> launchGrid(uint64_t items) {
  auto sms = multiprocessors();
  if (!sms) return sms.takeStatus();
  const uint64_t most = static_cast<uint64_t>(*sms) * kBlocksPerMultiprocessor;
  const uint64_t needed = (items + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return LaunchGrid{static_cast<unsigned>(std::clamp<uint64_t>(needed, 1, most)), kThreadsPerBlock};
}

}  // namespace ccscope::collectives::device
