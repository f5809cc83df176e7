#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include "transports/component_report.h"

namespace ccscope::transports {

ComponentReport probeCuda() {
  ComponentReport r{"cuda", true, "", {}, ""};
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  r.version = fmt::format("runtime {}.{}, driver {}", rt / 1000, (rt % 1000) / 10,
                          drv ? fmt::format("{}.{}", drv / 1000, (drv % 1000) / 10) : "none");
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    r.note = fmt::format("no GPU usable: {} ({})", cudaGetErrorString(e), static_cast<int>(e));
    return r;
  }
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) == cudaSuccess)
      r.devices.push_back(fmt::format("GPU {}: {} ({} MiB)", i, p.name, p.totalGlobalMem >> 20));
  }
  if (n == 0) r.note = "no GPU found";
  return r;
}

ComponentReport probeNccl() {
  int v = 0;
  ncclGetVersion(&v);
  return {"nccl",
          true,
          fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100),
          {},
          "transport not implemented yet; library detected"};
}

}  // namespace ccscope::transports
