// Whether a GPU is usable, asked in a child process: the rank processes of these tests are
// forked, and a parent that initialised CUDA would leave them a CUDA that cannot work.
#pragma once

#include <string>

namespace ccscope::tests {

// "" when a GPU is usable; else CUDA's own reason ("cudaGetDeviceCount: ...").
std::string gpuUnusableReason();

}  // namespace ccscope::tests

// First statement of every GPU test: skips, with CUDA's reason, where no GPU is usable.
#define SKIP_WITHOUT_GPU()                                                     \
  do {                                                                         \
    if (std::string why = ::ccscope::tests::gpuUnusableReason(); !why.empty()) \
      GTEST_SKIP() << "no CUDA device: " << why;                               \
  } while (0)
