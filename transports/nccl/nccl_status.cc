#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cstring>
#include <string>

#include "core/cuda_status.h"
#include "transports/common/hex.h"

extern char** environ;
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

Status exchangeUniqueId(launch::Bootstrap& bs, const std::string& key, bool root,
                        core::Deadline deadline, ncclUniqueId& id) {
  if (root) {
    if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
      return ncclStatus("ncclGetUniqueId", r, nullptr);
    return bs.put(key, toHex(&id, sizeof id));
  }
  CCSCOPE_ASSIGN_OR_RETURN(std::string hex, bs.get(key, deadline));
  if (!fromHex(hex, &id, sizeof id))
    return Status(Code::kInternal, "nccl: rank 0 published a malformed unique id")
        .withLayer(Layer::kBootstrap);
  return Status::ok();
}

std::string ncclSetupNote(int device) {
  std::string vars;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "NCCL_", 5) == 0) vars += fmt::format("{}{}", vars.empty() ? "" : " ", *e);
  return fmt::format("nccl: NCCL {} (built against {}) on GPU {}; {}", ncclRuntimeVersion(),
                     ncclVersionText(NCCL_VERSION_CODE), device,
                     vars.empty() ? "no NCCL_* variables set" : vars);
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
