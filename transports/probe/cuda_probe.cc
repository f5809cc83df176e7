#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdlib>

#include "transports/component_report.h"
#include "transports/probe/gpu_report.h"
#ifdef CCSCOPE_HAVE_NCCL
#include <nccl.h>

#include "transports/common/nccl_version.h"
#endif

namespace ccscope::transports {

namespace {

// CUDA encodes versions as 1000 * major + 10 * minor.
std::string cudaVersion(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

void readPeers(GpuReport& r, int n) {
  r.peer.assign(n, std::vector<int>(n, -1));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      int can = 0;
      if (i == j)
        r.peer[i][j] = -2;
      else if (cudaDeviceCanAccessPeer(&can, i, j) == cudaSuccess)
        r.peer[i][j] = can ? 1 : 0;
      else
        cudaGetLastError();  // leave no sticky error behind for the caller's next call
    }
}

}  // namespace

// The CUDA runtime's half of the GPU report: versions, devices by bus id, peer access.
void readCuda(GpuReport& r) {
  r.cuda_compiled = true;
  int rt = 0, drv = 0;
  if (cudaRuntimeGetVersion(&rt) == cudaSuccess) r.cuda_runtime = cudaVersion(rt);
  if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0) r.cuda_driver = cudaVersion(drv);
  int n = 0;
  if (cudaError_t e = cudaGetDeviceCount(&n); e != cudaSuccess) {
    r.no_gpu = cudaGetErrorString(e);
    r.cuda_hidden = e == cudaErrorNoDevice && std::getenv("CUDA_VISIBLE_DEVICES") != nullptr;
    cudaGetLastError();
    return;
  }
  if (n == 0) {
    r.no_gpu = "CUDA lists no device";
    return;
  }
  for (int i = 0; i < n; ++i) {
    GpuDevice d;
    d.cuda_index = i;
    char bus[nvml::kPciBusIdSize] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) == cudaSuccess) d.bus_id = normalizeBusId(bus);
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) == cudaSuccess) d.name = p.name;
    cudaGetLastError();
    r.devices.push_back(std::move(d));
  }
  readPeers(r, n);
}

ComponentReport probeCuda() {
  GpuReport g;
  readCuda(g);
  ComponentReport r{"cuda", true, "", {}, ""};
  r.version = fmt::format("runtime {}, driver {}", g.cuda_runtime.empty() ? "?" : g.cuda_runtime,
                          g.cuda_driver.empty() ? "none" : g.cuda_driver);
  for (const GpuDevice& d : g.devices)
    r.devices.push_back(fmt::format("GPU {}: {} ({})", d.cuda_index, d.name, d.bus_id));
  if (!g.no_gpu.empty()) r.note = "no GPU usable: " + g.no_gpu;
  return r;
}

#ifdef CCSCOPE_HAVE_NCCL
ComponentReport probeNccl() {
  int v = 0;
  ncclGetVersion(&v);
  return {"nccl",
          true,
          ncclVersionText(v),
          {},
          "library detected; --transport nccl runs over it where nvcc was found at build "
          "time"};
}
#endif

}  // namespace ccscope::transports
