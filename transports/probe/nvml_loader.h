// NVML, the driver's management library, loaded at run time: libnvidia-ml.so.1 ships with the
// driver, not the toolkit, so ccscope must start where it is absent. The declarations are our
// own minimal copy of the public nvml.h ABI (NVML API 11-13): the types and constants we read,
// and the versioned entry points nvml.h maps its plain names to (nvmlInit -> nvmlInit_v2, ...).
#pragma once

#include <string>

namespace ccscope::transports::nvml {

// nvmlReturn_t.
using Return = int;
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorFunctionNotFound = 13;

// nvmlDevice_t: an opaque handle.
struct DeviceSt;
using Device = DeviceSt*;

// nvmlEnableState_t.
enum EnableState : int { kFeatureDisabled = 0, kFeatureEnabled = 1 };
// nvmlMemoryErrorType_t.
enum MemoryErrorType : int { kMemoryErrorCorrected = 0, kMemoryErrorUncorrected = 1 };
// nvmlEccCounterType_t: volatile counts reset when the driver loads; aggregate ones persist.
enum EccCounterType : int { kVolatileEcc = 0, kAggregateEcc = 1 };
// nvmlPageRetirementCause_t.
enum PageRetirementCause : int { kRetireMultipleSbe = 0, kRetireDbe = 1 };

inline constexpr unsigned kNvLinkMaxLinks = 18;      // NVML_NVLINK_MAX_LINKS up to API 12
inline constexpr unsigned kDeviceNameSize = 96;      // NVML_DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned kDriverVersionSize = 80;   // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
inline constexpr unsigned kPciBusIdLegacySize = 16;  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
inline constexpr unsigned kPciBusIdSize = 32;        // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE

// nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 fills it.
struct PciInfo {
  char busIdLegacy[kPciBusIdLegacySize];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[kPciBusIdSize];
};

// nvmlMemory_t (v1), bytes.
struct Memory {
  unsigned long long total, free, used;
};

// nvmlProcessUtilizationSample_t: one process's use of a device over a sampling period, %.
struct ProcessUtilizationSample {
  unsigned pid;
  unsigned long long timeStamp;  // CPU timestamp, µs
  unsigned smUtil, memUtil, encUtil, decUtil;
};

// nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 fills it.
struct ProcessInfo {
  unsigned pid;
  unsigned long long usedGpuMemory;  // bytes
  unsigned gpuInstanceId, computeInstanceId;
};

// nvmlUtilization_t, %.
struct Utilization {
  unsigned gpu, memory;
};

// The entry points ccscope reads; a null pointer is a symbol this driver does not export. This
// table is also the seam the findings logic is tested through (a fake table, no driver).
struct Api {
  Return (*init)() = nullptr;  // nvmlInit_v2
  const char* (*errorString)(Return) = nullptr;
  Return (*systemGetDriverVersion)(char*, unsigned) = nullptr;
  Return (*deviceGetCount)(unsigned*) = nullptr;                  // _v2
  Return (*deviceGetHandleByIndex)(unsigned, Device*) = nullptr;  // _v2
  Return (*deviceGetPciInfo)(Device, PciInfo*) = nullptr;         // _v3
  Return (*deviceGetName)(Device, char*, unsigned) = nullptr;
  Return (*deviceGetMemoryInfo)(Device, Memory*) = nullptr;
  Return (*deviceGetEccMode)(Device, EnableState*, EnableState*) = nullptr;
  Return (*deviceGetTotalEccErrors)(Device, MemoryErrorType, EccCounterType,
                                    unsigned long long*) = nullptr;
  Return (*deviceGetRetiredPages)(Device, PageRetirementCause, unsigned*, unsigned long long*,
                                  unsigned long long*) = nullptr;  // _v2
  Return (*deviceGetRetiredPagesPendingStatus)(Device, EnableState*) = nullptr;
  Return (*deviceGetRemappedRows)(Device, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  Return (*deviceGetCurrPcieLinkGeneration)(Device, unsigned*) = nullptr;
  Return (*deviceGetMaxPcieLinkGeneration)(Device, unsigned*) = nullptr;
  Return (*deviceGetCurrPcieLinkWidth)(Device, unsigned*) = nullptr;
  Return (*deviceGetMaxPcieLinkWidth)(Device, unsigned*) = nullptr;
  Return (*deviceGetNvLinkState)(Device, unsigned, EnableState*) = nullptr;
  Return (*deviceGetProcessUtilization)(Device, ProcessUtilizationSample*, unsigned*,
                                        unsigned long long) = nullptr;
  Return (*deviceGetComputeRunningProcesses)(Device, unsigned*, ProcessInfo*) = nullptr;  // _v3
  Return (*deviceGetUtilizationRates)(Device, Utilization*) = nullptr;
};

struct Loaded {
  Api api;
  std::string error;  // why NVML is unusable ("" when init succeeded): dlerror() or init's error
  bool ok() const { return error.empty(); }
};

// Opens libnvidia-ml.so.1 once per process (kept open: the driver's library is never unloaded)
// and calls nvmlInit_v2. Never throws.
const Loaded& loadNvml();

// NVML's own words for a code ("Not Supported"), or "NVML error N" without the symbol.
std::string errorText(const Api& api, Return r);

}  // namespace ccscope::transports::nvml
