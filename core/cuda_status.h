// CUDA runtime errors as Status: the one conversion for every cuda* call (include only from
// targets that link CUDA::cudart). The message keeps CUDA's own words and the native code.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "core/status.h"

namespace ccscope::core {

// "cudaMalloc: out of memory (cudaErrorMemoryAllocation 2)". No device, no driver or a
// driver too old is kUnavailable (exit 5: a missing device); everything else kSystem. CUDA's
// own name and sentence for `e` are passed in, so code that reaches CUDA through a table of
// calls (cuda-ipc's seam) words its errors the same way without linking the runtime.
inline Status cudaStatusNamed(const char* call, cudaError_t e, const char* name,
                              const char* sentence, Layer layer = Layer::kGpu, int peer = -1) {
  if (e == cudaSuccess) return Status::ok();
  const bool missing = e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
                       e == cudaErrorInvalidDevice || e == cudaErrorDevicesUnavailable ||
                       e == cudaErrorStubLibrary || e == cudaErrorCallRequiresNewerDriver ||
                       e == cudaErrorSystemDriverMismatch || e == cudaErrorNotSupported;
  Status s(missing ? Code::kUnavailable : Code::kSystem,
           std::string(call) + ": " + sentence + " (" + name + " " +
               std::to_string(static_cast<int>(e)) + ")");
  s.withLayer(layer).withNative(call, static_cast<long>(e));
  if (peer >= 0) s.withPeer(peer);
  return s;
}

inline Status cudaStatus(const char* call, cudaError_t e, Layer layer = Layer::kGpu,
                         int peer = -1) {
  if (e == cudaSuccess) return Status::ok();
  return cudaStatusNamed(call, e, cudaGetErrorName(e), cudaGetErrorString(e), layer, peer);
}

}  // namespace ccscope::core

#define CCSCOPE_CUDA_RETURN(call, ...)                                               \
  do {                                                                               \
    if (cudaError_t ccscope_cuda_e_ = (__VA_ARGS__); ccscope_cuda_e_ != cudaSuccess) \
      return ::ccscope::core::cudaStatus(call, ccscope_cuda_e_);                     \
  } while (0)
