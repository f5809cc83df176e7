// One GPU's health as NVML reports it, and the findings drawn from it. Every reading is optional:
// a symbol the driver lacks or a call that fails leaves that reading unknown, and an unknown
// reading is listed by name with NVML's reason, never taken as healthy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "transports/probe/nvml_loader.h"

namespace ccscope::transports {

// A fault makes the GPU layer fail; a warning is worth a look but may be benign (an idle GPU
// lowers its PCIe generation to save power).
enum class GpuSeverity { kFault, kWarning };
const char* severityName(GpuSeverity s);

struct GpuFinding {
  GpuSeverity severity = GpuSeverity::kFault;
  std::string text;  // about one device, without naming it: the caller prefixes the device
};

struct RemappedRows {
  unsigned correctable = 0, uncorrectable = 0;
  bool pending = false;  // remapping waits for a GPU reset
  bool failure = false;  // a remapping failed at some point: the row could not be replaced
};

struct NvmlReading {
  std::string bus_id;  // normalised, "0000:3b:00.0"
  std::string name;
  std::optional<uint64_t> mem_total, mem_used;
  std::optional<bool> ecc_enabled;
  // Volatile: since the driver loaded; aggregate: over the device's life.
  std::optional<uint64_t> ecc_corrected, ecc_uncorrected;
  std::optional<uint64_t> ecc_corrected_aggregate, ecc_uncorrected_aggregate;
  std::optional<unsigned> retired_sbe, retired_dbe;  // pages retired per cause
  std::optional<bool> retirement_pending;
  std::optional<RemappedRows> remapped;
  std::optional<unsigned> pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
  bool nvlink_known = false;  // at least one link answered
  std::vector<unsigned> nvlink_up, nvlink_down;
  std::vector<std::string> unknown;  // "ECC mode (Not Supported)"
};

struct NvmlSnapshot {
  std::string error;  // NVML unusable: the loader's or nvmlDeviceGetCount's words
  std::string driver_version;
  std::vector<NvmlReading> devices;
};

// Reads every device NVML lists through `api` (a loaded library or a test's fake table).
NvmlSnapshot readNvml(const nvml::Api& api);
// The snapshot of the driver's NVML, or its error when libnvidia-ml.so.1 is unusable.
NvmlSnapshot readNvml();

// Faults and warnings in one reading; unknown readings yield neither.
std::vector<GpuFinding> judgeNvml(const NvmlReading& r);

// "00000000:3B:00.0" (NVML) and "0000:3b:00.0" (CUDA) both become "0000:3b:00.0"; text that
// is not a bus id comes back lower-cased.
std::string normalizeBusId(const std::string& id);

}  // namespace ccscope::transports
