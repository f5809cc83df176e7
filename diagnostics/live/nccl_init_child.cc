// The NCCL side of the library probe, run in the helper child (`ccscope diagnose
// --library-init-child nccl:DEVICE`) only where a GPU is usable: a one-rank communicator on
// that GPU. NCCL's log (NCCL_DEBUG=INFO, set by the parent) goes to stdout/stderr, where the
// parent reads it: plugin, network and topology problems show up there at init.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdio>

#include "diagnostics/live/library_init.h"

namespace ccscope::diagnostics {

int ncclInitChild(int device) {
  int v = 0;
  ncclGetVersion(&v);
  std::printf("%s version %d.%d.%d\n", kInitLinePrefix, v / 10000, (v % 10000) / 100, v % 100);
  std::fflush(stdout);
  int count = 0;
  cudaError_t ce = cudaGetDeviceCount(&count);
  if (ce != cudaSuccess || count == 0) {
    std::printf("%s error: cudaGetDeviceCount: %s\n", kInitLinePrefix,
                ce != cudaSuccess ? cudaGetErrorString(ce) : "no GPU");
    return 1;
  }
  ce = cudaSetDevice(device % count);
  if (ce != cudaSuccess) {
    std::printf("%s error: cudaSetDevice(%d): %s\n", kInitLinePrefix, device % count,
                cudaGetErrorString(ce));
    return 1;
  }
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r == ncclSuccess) r = ncclCommInitRank(&comm, 1, id, 0);
  if (r != ncclSuccess) {
    std::printf("%s error: ncclCommInitRank: %s\n", kInitLinePrefix, ncclGetErrorString(r));
    std::fflush(stdout);
    return 1;
  }
  ncclCommDestroy(comm);
  std::printf("%s transports GPU %d\n", kInitLinePrefix, device % count);
  std::printf("%s ok\n", kInitLinePrefix);
  return 0;
}

}  // namespace ccscope::diagnostics
