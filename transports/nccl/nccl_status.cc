#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include "core/cuda_status.h"
#include "transports/nccl/nccl_communicator.h"
#include "transports/nccl/nccl_transport.h"

namespace ccscope::transports {

using core::Code;
using core::Layer;
using core::Status;

namespace {

const char* resultName(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    default:
      return "ncclResult";
  }
}

}  // namespace

// "ncclSend: remote process exited or there was a network error (ncclRemoteError 6): <NCCL's
// last message>". A peer that failed is kRemoteError (exit 3, as over shm and tcp).
Status ncclStatus(const char* call, ncclResult_t r, ncclComm_t comm) {
  const Code code = r == ncclRemoteError                                ? Code::kRemoteError
                    : r == ncclInvalidArgument || r == ncclInvalidUsage ? Code::kInvalidArgument
                    : r == ncclInternalError                            ? Code::kInternal
                                                                        : Code::kSystem;
  const char* last = ncclGetLastError(comm);
  Status s(code, fmt::format("{}: {} ({} {}){}{}", call, ncclGetErrorString(r), resultName(r),
                             static_cast<int>(r), last && *last ? ": " : "", last ? last : ""));
  s.withLayer(r == ncclUnhandledCudaError ? Layer::kGpu : Layer::kLibrary)
      .withNative(call, static_cast<long>(r));
  return s;
}

std::string ncclRuntimeVersion() {
  int v = 0;
  ncclGetVersion(&v);
  return ncclVersionText(v);
}

Status ncclUsable() {
  int v = 0;
  if (ncclResult_t r = ncclGetVersion(&v); r != ncclSuccess)
    return ncclStatus("ncclGetVersion", r, nullptr).withLayer(Layer::kLibrary);
  // A newer library of the same major version reads an older ncclConfig_t (it carries its size
  // and version); an older one may lack what the headers declare.
  if (v < NCCL_VERSION_CODE || v / 10000 != NCCL_VERSION_CODE / 10000)
    return Status(Code::kUnavailable,
                  fmt::format("libnccl {} was loaded, and this build has NCCL {}'s headers: put "
                              "NCCL {} or a later {}.x first on LD_LIBRARY_PATH, or rebuild",
                              ncclVersionText(v), ncclVersionText(NCCL_VERSION_CODE),
                              ncclVersionText(NCCL_VERSION_CODE), NCCL_MAJOR))
        .withLayer(Layer::kLibrary);
  int n = 0;
  CCSCOPE_RETURN_IF_ERROR(core::cudaStatus("cudaGetDeviceCount", cudaGetDeviceCount(&n)));
  if (n == 0)
    return Status(Code::kUnavailable, "cudaGetDeviceCount: no CUDA device visible")
        .withLayer(Layer::kGpu);
  return Status::ok();
}

}  // namespace ccscope::transports
