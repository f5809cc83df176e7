#include "transports/probe/nvml_loader.h"

#include <dlfcn.h>

#include <string>

namespace ccscope::transports::nvml {

namespace {

constexpr const char* kLibrary = "libnvidia-ml.so.1";

// dlsym into a typed pointer; a symbol this driver lacks stays null (its field is "unknown").
template <typename Fn>
void bind(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
}

Loaded load() {
  Loaded l;
  void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l.error = e ? e : std::string(kLibrary) + ": cannot be opened";
    return l;
  }
  Api& a = l.api;
  bind(lib, "nvmlInit_v2", a.init);
  bind(lib, "nvmlErrorString", a.errorString);
  bind(lib, "nvmlSystemGetDriverVersion", a.systemGetDriverVersion);
  bind(lib, "nvmlDeviceGetCount_v2", a.deviceGetCount);
  bind(lib, "nvmlDeviceGetHandleByIndex_v2", a.deviceGetHandleByIndex);
  bind(lib, "nvmlDeviceGetPciInfo_v3", a.deviceGetPciInfo);
  bind(lib, "nvmlDeviceGetName", a.deviceGetName);
  bind(lib, "nvmlDeviceGetMemoryInfo", a.deviceGetMemoryInfo);
  bind(lib, "nvmlDeviceGetEccMode", a.deviceGetEccMode);
  bind(lib, "nvmlDeviceGetTotalEccErrors", a.deviceGetTotalEccErrors);
  bind(lib, "nvmlDeviceGetRetiredPages_v2", a.deviceGetRetiredPages);
  bind(lib, "nvmlDeviceGetRetiredPagesPendingStatus", a.deviceGetRetiredPagesPendingStatus);
  bind(lib, "nvmlDeviceGetRemappedRows", a.deviceGetRemappedRows);
  bind(lib, "nvmlDeviceGetCurrPcieLinkGeneration", a.deviceGetCurrPcieLinkGeneration);
  bind(lib, "nvmlDeviceGetMaxPcieLinkGeneration", a.deviceGetMaxPcieLinkGeneration);
  bind(lib, "nvmlDeviceGetCurrPcieLinkWidth", a.deviceGetCurrPcieLinkWidth);
  bind(lib, "nvmlDeviceGetMaxPcieLinkWidth", a.deviceGetMaxPcieLinkWidth);
  bind(lib, "nvmlDeviceGetNvLinkState", a.deviceGetNvLinkState);
  bind(lib, "nvmlDeviceGetProcessUtilization", a.deviceGetProcessUtilization);
  bind(lib, "nvmlDeviceGetComputeRunningProcesses_v3", a.deviceGetComputeRunningProcesses);
  bind(lib, "nvmlDeviceGetUtilizationRates", a.deviceGetUtilizationRates);
  if (!a.init) {
    l.error = std::string(kLibrary) + " has no nvmlInit_v2 (driver too old)";
    return l;
  }
  if (Return r = a.init(); r != kSuccess) l.error = "nvmlInit_v2: " + errorText(a, r);
  return l;
}

}  // namespace

const Loaded& loadNvml() {
  static const Loaded loaded = load();  // thread-safe once; NVML stays initialised until exit
  return loaded;
}

std::string errorText(const Api& api, Return r) {
  const char* s = api.errorString ? api.errorString(r) : nullptr;
  return s ? std::string(s) : "NVML error " + std::to_string(r);
}

}  // namespace ccscope::transports::nvml
