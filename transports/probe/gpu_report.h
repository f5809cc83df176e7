// The GPU layer as `ccscope info` and `ccscope diagnose` see it: the CUDA runtime's view (devices,
// driver and runtime versions, peer access) merged by PCI bus id with NVML's health readings,
// each device's findings, and the entry point of the kernel-and-copy probe that a caller runs in
// a child process (a GPU that never finishes a kernel must not hang the caller).
#pragma once

#include <string>
#include <vector>

#include "transports/probe/gpu_health.h"

namespace ccscope::transports {

// What the kernel probe's child prints: "ccscope-gpu: ok 12.3 ms", "ccscope-gpu: error <call>:
// <CUDA's words>", "ccscope-gpu: skip <why>" (exit code kGpuProbeNotCompiled).
inline constexpr const char* kGpuProbeLinePrefix = "ccscope-gpu:";
inline constexpr int kGpuProbeNotCompiled = 5;

struct GpuDevice {
  int cuda_index = -1;  // -1: NVML lists it but CUDA does not (CUDA_VISIBLE_DEVICES)
  std::string bus_id;   // normalizeBusId form
  std::string name;
  bool nvml_read = false;  // NVML knew this device
  NvmlReading nvml;        // every field unknown unless nvml_read
  std::vector<GpuFinding> findings;
  std::vector<std::string> unknown;  // readings nobody could take, with the reason
  std::string kernel_probe;          // "" not run; "ok in 12.3 ms"; or what went wrong
};

struct GpuReport {
  bool cuda_compiled = false;             // the CUDA runtime probe (toolkit found at build time)
  bool kernel_compiled = false;           // the probe kernel (nvcc found at build time)
  std::string cuda_runtime, cuda_driver;  // "13.0"; "" when unknown or no driver
  std::string no_gpu;                     // CUDA's reason when it sees no device
  bool cuda_hidden = false;  // no device because CUDA_VISIBLE_DEVICES hides them (a choice)
  std::string nvml_error;    // why NVML readings are unknown
  std::string nvml_driver;   // driver version NVML reports ("570.86.15")
  std::vector<GpuDevice> devices;
  // peer[i][j]: cudaDeviceCanAccessPeer(i, j) over CUDA indices; -1 unknown, -2 the same GPU.
  std::vector<std::vector<int>> peer;
  // A one-line label: "GPU 1 (0000:3b:00.0, NVIDIA H100)".
  static std::string label(const GpuDevice& d);
};

// CUDA runtime and NVML now (bounded: no kernel runs here). Never throws.
GpuReport probeGpus();
// Merges NVML's devices into the report by bus id and judges each device's readings.
void mergeNvml(GpuReport& r, const NvmlSnapshot& s);

// The child's side of the kernel probe on one CUDA device; its exit code (0 ok, 1 failed,
// kGpuProbeNotCompiled without nvcc at build time).
int runGpuKernelProbeChild(int device);

}  // namespace ccscope::transports
