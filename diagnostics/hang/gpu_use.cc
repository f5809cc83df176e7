#include "diagnostics/hang/gpu_use.h"

#include <dirent.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "transports/probe/nvml_loader.h"

namespace ccscope::diagnostics {

namespace {

namespace nv = transports::nvml;

struct Use {
  std::map<unsigned, int> sm;  // pid -> SM %
  std::map<unsigned, long long> mem;
  std::set<unsigned> on_gpu;
  std::string problems;
};

// One device's compute processes and their SM use since `since` (µs, CPU clock).
void sampleDevice(const nv::Api& a, unsigned i, unsigned long long since, Use& u) {
  nv::Device d = nullptr;
  if (a.deviceGetHandleByIndex(i, &d) != nv::kSuccess) return;
  if (a.deviceGetComputeRunningProcesses) {
    unsigned n = 64;
    std::vector<nv::ProcessInfo> info(n);
    if (a.deviceGetComputeRunningProcesses(d, &n, info.data()) == nv::kSuccess) {
      for (unsigned k = 0; k < n && k < info.size(); ++k) {
        u.on_gpu.insert(info[k].pid);
        u.mem[info[k].pid] = static_cast<long long>(info[k].usedGpuMemory >> 20);
      }
    }
  }
  if (a.deviceGetProcessUtilization) {
    unsigned n = 0;
    a.deviceGetProcessUtilization(d, nullptr, &n, since);
    std::vector<nv::ProcessUtilizationSample> samples(std::max(n, 1u) + 8);
    n = static_cast<unsigned>(samples.size());
    const nv::Return r = a.deviceGetProcessUtilization(d, samples.data(), &n, since);
    if (r == nv::kSuccess) {
      for (unsigned k = 0; k < n; ++k)
        u.sm[samples[k].pid] = std::max(u.sm[samples[k].pid], static_cast<int>(samples[k].smUtil));
    } else if (u.problems.empty()) {
      u.problems = "per-process utilisation: " + nv::errorText(a, r);
    }
  }
}

}  // namespace

void readGpuUse(double sample_s, HangSnapshot& snap) {
  const nv::Loaded& l = nv::loadNvml();
  if (!l.ok()) {
    snap.sources.push_back({"nvml", "unavailable", l.error});
    for (auto& p : snap.processes) p.gpu_error = "NVML unavailable";
    return;
  }
  const nv::Api& a = l.api;
  unsigned count = 0;
  if (!a.deviceGetCount || a.deviceGetCount(&count) != nv::kSuccess) {
    snap.sources.push_back({"nvml", "error", "nvmlDeviceGetCount failed"});
    return;
  }
  Use u;
  const auto since =
      static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count() -
                                      static_cast<long long>(std::max(sample_s, 1.0) * 1e6));
  for (unsigned i = 0; i < count; ++i) sampleDevice(a, i, since, u);

  int readings = 0;
  for (auto& p : snap.processes) {
    const auto pid = static_cast<unsigned>(p.pid);
    if (u.sm.count(pid)) {
      p.gpu_sm_percent = u.sm[pid];
      ++readings;
    } else if (u.on_gpu.count(pid)) {
      p.gpu_sm_percent = 0;  // on a GPU, no sample in the period: it ran no kernel
      ++readings;
    } else {
      p.gpu_error = "not among NVML's processes (another PID namespace, or no GPU context)";
    }
    if (u.mem.count(pid)) p.gpu_memory_mib = u.mem[pid];
  }
  snap.sources.push_back(
      {"nvml", readings ? "read" : "error",
       fmt::format("{} GPU(s), {} of {} process(es) read{}{}", count, readings,
                   snap.processes.size(), u.problems.empty() ? "" : "; ", u.problems)});
}

std::vector<std::string> rdmaDevices() {
  std::vector<std::string> out;
  DIR* d = opendir("/sys/class/infiniband");
  if (!d) return out;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') out.emplace_back(e->d_name);
  closedir(d);
  return out;
}

}  // namespace ccscope::diagnostics
