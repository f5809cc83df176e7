// The GPU layer of `ccscope info` and `ccscope diagnose`: the CUDA runtime and NVML readings of
// transports/probe/gpu_report.h plus the kernel-and-copy probe, which runs in one child process
// per device under a deadline so that a GPU that never finishes a kernel is named (index and
// bus id) instead of hanging the caller. Rank 0 of `diagnose` judges every rank's report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "diagnostics/live/child_process.h"
#include "diagnostics/live/probes.h"
#include "transports/probe/gpu_report.h"

namespace ccscope::diagnostics {

// The hidden option of `ccscope info` that runs the probe's child side on one device.
inline constexpr const char* kGpuProbeChildFlag = "--gpu-probe-child";

struct GpuLayerOptions {
  std::vector<std::string> child_command;  // the device index is appended
  double timeout_s = 5;                    // per device, the children run side by side
  // Devices this process probes with a kernel: d % share_of == share_index (share_of 0: all),
  // so ranks on one host split the GPUs instead of all launching on every one.
  int share_index = 0, share_of = 0;
};

// CUDA runtime, NVML, then the kernel probe on this process's share of the devices.
transports::GpuReport runGpuLayer(const GpuLayerOptions& o);

// One child run's verdict on a device: kernel_probe text, and a finding when it failed.
void judgeKernelRun(const ChildRun& run, double timeout_s, transports::GpuDevice& d);

// The report as JSON (what `info --json` prints and a `diagnose` rank posts) and the text lines
// of `ccscope info`.
nlohmann::json gpuReportJson(const transports::GpuReport& r);
std::vector<std::string> gpuReportText(const transports::GpuReport& r);

// Rank 0: the "gpu devices" result from every rank's gpuReportJson (null: not reported). Fails
// on a fault, warns on a warning, skips when no rank has a GPU (with CUDA's reason).
ProbeResult judgeGpuLayer(const std::vector<nlohmann::json>& per_rank,
                          const std::vector<std::string>& hosts);

}  // namespace ccscope::diagnostics
