#include "transports/probe/gpu_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace ccscope::transports {

#ifdef CCSCOPE_HAVE_CUDA
void readCuda(GpuReport& r);  // cuda_probe.cc
#endif

std::string GpuReport::label(const GpuDevice& d) {
  std::vector<std::string> about = {d.bus_id.empty() ? "bus id unknown" : d.bus_id};
  if (!d.name.empty()) about.push_back(d.name);
  if (d.cuda_index < 0) about.push_back("not visible to CUDA");
  std::string index = d.cuda_index >= 0 ? fmt::format(" {}", d.cuda_index) : "";
  return fmt::format("GPU{} ({})", index, fmt::join(about, ", "));
}

void mergeNvml(GpuReport& r, const NvmlSnapshot& s) {
  r.nvml_error = s.error;
  r.nvml_driver = s.driver_version;
  for (const NvmlReading& n : s.devices) {
    auto it = std::find_if(r.devices.begin(), r.devices.end(), [&](const GpuDevice& d) {
      return !n.bus_id.empty() && d.bus_id == n.bus_id;
    });
    if (it == r.devices.end()) it = r.devices.insert(r.devices.end(), GpuDevice{});
    it->nvml_read = true;
    it->nvml = n;
    if (it->bus_id.empty()) it->bus_id = n.bus_id;
    if (it->name.empty()) it->name = n.name;
  }
  const bool cuda_sees_none = std::none_of(r.devices.begin(), r.devices.end(),
                                           [](const GpuDevice& d) { return d.cuda_index >= 0; });
  for (GpuDevice& d : r.devices) {
    if (!d.nvml_read) {
      d.unknown.push_back(
          fmt::format("NVML readings ({})", s.error.empty() ? "device not listed" : s.error));
      continue;
    }
    d.findings = judgeNvml(d.nvml);
    d.unknown = d.nvml.unknown;
    // The driver sees the GPU and the runtime cannot use any: a driver/runtime mismatch or a
    // broken device node, not a machine without GPUs.
    if (cuda_sees_none && r.cuda_compiled && !r.no_gpu.empty() && !r.cuda_hidden)
      d.findings.insert(
          d.findings.begin(),
          {GpuSeverity::kFault, "NVML lists this GPU but CUDA cannot use it: " + r.no_gpu});
  }
}

GpuReport probeGpus() {
  GpuReport r;
#ifdef CCSCOPE_HAVE_CUDA
  readCuda(r);
#else
  r.no_gpu = "CUDA runtime probe not compiled in (CUDA toolkit not found at build time)";
#endif
#ifdef CCSCOPE_HAVE_GPU_KERNEL
  r.kernel_compiled = true;
#endif
  mergeNvml(r, readNvml());
  return r;
}

#ifndef CCSCOPE_HAVE_GPU_KERNEL
int runGpuKernelProbeChild(int /*device*/) {
  std::printf("%s skip the probe kernel is not compiled in (nvcc not found at build time)\n",
              kGpuProbeLinePrefix);
  std::fflush(stdout);
  return kGpuProbeNotCompiled;
}
#endif

}  // namespace ccscope::transports
