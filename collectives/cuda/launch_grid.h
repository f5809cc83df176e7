// Grid sizing for the grid-stride kernels of collectives/cuda and bench/cuda: enough blocks to
// fill the current device (its multiprocessor count, looked up once per device), fewer when
// there is less work. No CUDA headers, so host code can size launches too.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace ccscope::collectives::device {

struct LaunchGrid {
  unsigned blocks = 1;
  unsigned threads = 1;
};

inline constexpr unsigned kThreadsPerBlock = 512;
inline constexpr unsigned kBlocksPerMultiprocessor = 4;  // 2048 resident threads per SM on sm_90

// The grid for `items` independent work items on the calling thread's current device.
core::Result<LaunchGrid> launchGrid(uint64_t items);

}  // namespace ccscope::collectives::device
