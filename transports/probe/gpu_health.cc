#include "transports/probe/gpu_health.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace ccscope::transports {

using nvml::Api;
using nvml::Device;
using nvml::Return;

namespace {

// One reading: a missing symbol or a failed call leaves `out` empty and names the reading in
// `unknown` with NVML's reason.
class Reader {
 public:
  Reader(const Api& api, Device dev, NvmlReading& r) : api_(api), dev_(dev), r_(r) {}

  template <typename Fn, typename... Args>
  bool call(const char* what, Fn fn, Args... args) {
    if (!fn) return miss(what, "not in this driver's NVML");
    Return e = fn(dev_, args...);
    if (e == nvml::kSuccess) return true;
    return miss(what, nvml::errorText(api_, e));
  }
  bool miss(const char* what, const std::string& why) {
    r_.unknown.push_back(fmt::format("{} ({})", what, why));
    return false;
  }

 private:
  const Api& api_;
  Device dev_;
  NvmlReading& r_;
};

void readIdentity(const Api& api, Reader& rd, NvmlReading& r) {
  nvml::PciInfo pci{};
  if (rd.call("PCI bus id", api.deviceGetPciInfo, &pci))
    r.bus_id = normalizeBusId(pci.busId[0] ? pci.busId : pci.busIdLegacy);
  char name[nvml::kDeviceNameSize] = {0};
  if (rd.call("name", api.deviceGetName, name, static_cast<unsigned>(sizeof name))) r.name = name;
  nvml::Memory mem{};
  if (rd.call("memory", api.deviceGetMemoryInfo, &mem)) {
    r.mem_total = mem.total;
    r.mem_used = mem.used;
  }
}

void readEcc(const Api& api, Reader& rd, NvmlReading& r) {
  nvml::EnableState cur = nvml::kFeatureDisabled, pending = nvml::kFeatureDisabled;
  if (rd.call("ECC mode", api.deviceGetEccMode, &cur, &pending))
    r.ecc_enabled = cur == nvml::kFeatureEnabled;
  struct Counter {
    std::optional<uint64_t>* out;
    nvml::MemoryErrorType type;
    nvml::EccCounterType counter;
    const char* what;
  } counters[] = {
      {&r.ecc_corrected, nvml::kMemoryErrorCorrected, nvml::kVolatileEcc, "ECC corrected"},
      {&r.ecc_uncorrected, nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc, "ECC uncorrected"},
      {&r.ecc_corrected_aggregate, nvml::kMemoryErrorCorrected, nvml::kAggregateEcc,
       "ECC corrected (aggregate)"},
      {&r.ecc_uncorrected_aggregate, nvml::kMemoryErrorUncorrected, nvml::kAggregateEcc,
       "ECC uncorrected (aggregate)"},
  };
  for (const Counter& c : counters) {
    unsigned long long n = 0;
    if (rd.call(c.what, api.deviceGetTotalEccErrors, c.type, c.counter, &n)) *c.out = n;
  }
}

void readRetirement(const Api& api, Device d, Reader& rd, NvmlReading& r) {
  // A size query (count 0) answers with the number of pages; "insufficient size" while doing
  // so is an answer too.
  auto pages = [&](nvml::PageRetirementCause cause, const char* what) -> std::optional<unsigned> {
    if (!api.deviceGetRetiredPages) {
      rd.miss(what, "not in this driver's NVML");
      return std::nullopt;
    }
    unsigned count = 0;
    unsigned long long addr = 0, stamp = 0;
    Return e = api.deviceGetRetiredPages(d, cause, &count, &addr, &stamp);
    if (e == nvml::kSuccess || e == nvml::kErrorInsufficientSize) return count;
    rd.miss(what, nvml::errorText(api, e));
    return std::nullopt;
  };
  r.retired_sbe = pages(nvml::kRetireMultipleSbe, "retired pages (single-bit)");
  r.retired_dbe = pages(nvml::kRetireDbe, "retired pages (double-bit)");
  nvml::EnableState pending = nvml::kFeatureDisabled;
  if (rd.call("pending page retirement", api.deviceGetRetiredPagesPendingStatus, &pending))
    r.retirement_pending = pending == nvml::kFeatureEnabled;
  unsigned corr = 0, unc = 0, is_pending = 0, failed = 0;
  if (rd.call("remapped rows", api.deviceGetRemappedRows, &corr, &unc, &is_pending, &failed))
    r.remapped = RemappedRows{corr, unc, is_pending != 0, failed != 0};
}

void readLinks(const Api& api, Device d, Reader& rd, NvmlReading& r) {
  struct Link {
    std::optional<unsigned>* out;
    Return (*fn)(Device, unsigned*);
    const char* what;
  } links[] = {{&r.pcie_gen, api.deviceGetCurrPcieLinkGeneration, "PCIe generation"},
               {&r.pcie_gen_max, api.deviceGetMaxPcieLinkGeneration, "PCIe max generation"},
               {&r.pcie_width, api.deviceGetCurrPcieLinkWidth, "PCIe width"},
               {&r.pcie_width_max, api.deviceGetMaxPcieLinkWidth, "PCIe max width"}};
  for (const Link& l : links) {
    unsigned v = 0;
    if (rd.call(l.what, l.fn, &v)) *l.out = v;
  }
  if (!api.deviceGetNvLinkState) {
    rd.miss("NVLink", "not in this driver's NVML");
    return;
  }
  std::string why;
  for (unsigned link = 0; link < nvml::kNvLinkMaxLinks; ++link) {
    nvml::EnableState active = nvml::kFeatureDisabled;
    Return e = api.deviceGetNvLinkState(d, link, &active);
    if (e != nvml::kSuccess) {  // a link this GPU does not have, or no NVLink at all
      if (why.empty()) why = nvml::errorText(api, e);
      continue;
    }
    r.nvlink_known = true;
    (active == nvml::kFeatureEnabled ? r.nvlink_up : r.nvlink_down).push_back(link);
  }
  if (!r.nvlink_known) rd.miss("NVLink", why);
}

}  // namespace

const char* severityName(GpuSeverity s) { return s == GpuSeverity::kFault ? "fault" : "warning"; }

std::string normalizeBusId(const std::string& id) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) == 4)
    return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, dev, fn);
  std::string out = id;
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

NvmlSnapshot readNvml(const Api& api) {
  NvmlSnapshot s;
  char version[nvml::kDriverVersionSize] = {0};
  if (api.systemGetDriverVersion &&
      api.systemGetDriverVersion(version, sizeof version) == nvml::kSuccess)
    s.driver_version = version;
  unsigned n = 0;
  if (!api.deviceGetCount || !api.deviceGetHandleByIndex) {
    s.error = "NVML has no nvmlDeviceGetCount_v2/nvmlDeviceGetHandleByIndex_v2";
    return s;
  }
  if (Return e = api.deviceGetCount(&n); e != nvml::kSuccess) {
    s.error = "nvmlDeviceGetCount_v2: " + nvml::errorText(api, e);
    return s;
  }
  for (unsigned i = 0; i < n; ++i) {
    NvmlReading r;
    Device d = nullptr;
    if (Return e = api.deviceGetHandleByIndex(i, &d); e != nvml::kSuccess) {
      r.unknown.push_back(
          fmt::format("device {} (nvmlDeviceGetHandleByIndex_v2: {})", i, nvml::errorText(api, e)));
      s.devices.push_back(r);
      continue;
    }
    Reader rd(api, d, r);
    readIdentity(api, rd, r);
    readEcc(api, rd, r);
    readRetirement(api, d, rd, r);
    readLinks(api, d, rd, r);
    s.devices.push_back(std::move(r));
  }
  return s;
}

NvmlSnapshot readNvml() {
  const nvml::Loaded& l = nvml::loadNvml();
  if (!l.ok()) return NvmlSnapshot{l.error, "", {}};
  return readNvml(l.api);
}

std::vector<GpuFinding> judgeNvml(const NvmlReading& r) {
  std::vector<GpuFinding> out;
  auto fault = [&](std::string t) { out.push_back({GpuSeverity::kFault, std::move(t)}); };
  auto warn = [&](std::string t) { out.push_back({GpuSeverity::kWarning, std::move(t)}); };
  if (r.pcie_width && r.pcie_width_max && *r.pcie_width < *r.pcie_width_max)
    fault(fmt::format("PCIe link x{} of x{}: lanes lost (reseat the GPU, check the slot/riser)",
                      *r.pcie_width, *r.pcie_width_max));
  if (r.pcie_gen && r.pcie_gen_max && *r.pcie_gen < *r.pcie_gen_max)
    warn(fmt::format("PCIe gen {} of {}: may be power-saving; recheck under load", *r.pcie_gen,
                     *r.pcie_gen_max));
  if (r.ecc_uncorrected.value_or(0) > 0)
    fault(fmt::format("{} uncorrectable ECC errors since the driver loaded", *r.ecc_uncorrected));
  else if (r.ecc_uncorrected_aggregate.value_or(0) > 0)
    warn(
        fmt::format("{} uncorrectable ECC errors over the GPU's life (none since the driver "
                    "loaded)",
                    *r.ecc_uncorrected_aggregate));
  if (r.retirement_pending.value_or(false))
    warn("pages pending retirement: reset the GPU to retire them");
  if (r.remapped && r.remapped->failure)
    fault("a row remapping failed: the GPU could not replace a bad memory row");
  if (r.remapped && r.remapped->pending)
    warn(
        fmt::format("row remapping pending ({} uncorrectable, {} correctable rows): reset the "
                    "GPU to apply it",
                    r.remapped->uncorrectable, r.remapped->correctable));
  if (!r.nvlink_down.empty() && !r.nvlink_up.empty())
    fault(fmt::format("NVLink link(s) {} down ({} up)", fmt::join(r.nvlink_down, ", "),
                      r.nvlink_up.size()));
  else if (!r.nvlink_down.empty())
    warn(fmt::format("every NVLink link is down ({} links): peers can only use PCIe",
                     r.nvlink_down.size()));
  return out;
}

}  // namespace ccscope::transports
