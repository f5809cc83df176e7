// The GPU layer as `ccscope info` prints it: one block per device, "?" for a reading nobody
// could take (listed again under "unknown" with the reason).
#include <fmt/format.h>

#include "diagnostics/live/gpu_layer.h"
#include "diagnostics/live/optional_text.h"

namespace ccscope::diagnostics {

using transports::GpuDevice;
using transports::GpuReport;

namespace {

std::string yesNo(const std::optional<bool>& v, const char* yes, const char* no) {
  return v ? (*v ? yes : no) : "?";
}

std::string gib(const std::optional<uint64_t>& v) {
  return v ? fmt::format("{:.1f} GiB", static_cast<double>(*v) / (1ull << 30)) : "?";
}

std::vector<std::string> readingLines(const transports::NvmlReading& n) {
  std::vector<std::string> out;
  out.push_back(fmt::format("memory {} used of {}", gib(n.mem_used), gib(n.mem_total)));
  out.push_back(
      fmt::format("ECC {}, since driver load {} corrected / {} uncorrected, lifetime {} / {}",
                  yesNo(n.ecc_enabled, "on", "off"), show(n.ecc_corrected), show(n.ecc_uncorrected),
                  show(n.ecc_corrected_aggregate), show(n.ecc_uncorrected_aggregate)));
  out.push_back(fmt::format("retired pages {} single-bit, {} double-bit, pending: {}",
                            show(n.retired_sbe), show(n.retired_dbe),
                            yesNo(n.retirement_pending, "yes", "no")));
  out.push_back(
      n.remapped
          ? fmt::format("remapped rows {} correctable, {} uncorrectable, pending: {}, failure: {}",
                        n.remapped->correctable, n.remapped->uncorrectable,
                        n.remapped->pending ? "yes" : "no", n.remapped->failure ? "yes" : "no")
          : "remapped rows ?");
  std::string nvlink = n.nvlink_known
                           ? fmt::format("{} up, {} down", n.nvlink_up.size(), n.nvlink_down.size())
                           : "?";
  out.push_back(fmt::format("PCIe gen {} of {}, width x{} of x{}; NVLink {}", show(n.pcie_gen),
                            show(n.pcie_gen_max), show(n.pcie_width), show(n.pcie_width_max),
                            nvlink));
  return out;
}

void deviceLines(const GpuDevice& d, std::vector<std::string>& out) {
  out.push_back("  " + GpuReport::label(d));
  if (d.nvml_read)
    for (auto& l : readingLines(d.nvml)) out.push_back("    " + l);
  if (!d.kernel_probe.empty()) out.push_back("    kernel probe: " + d.kernel_probe);
  for (const auto& f : d.findings)
    out.push_back(fmt::format(
        "    {}: {}", f.severity == transports::GpuSeverity::kFault ? "FAULT" : "WARNING", f.text));
  for (const auto& u : d.unknown) out.push_back("    unknown: " + u);
}

std::string peerLine(const GpuReport& r) {
  std::vector<std::string> rows;
  for (size_t i = 0; i < r.peer.size(); ++i) {
    std::string row;
    for (int v : r.peer[i]) row += v == -2 ? '-' : v == 1 ? 'y' : v == 0 ? 'n' : '?';
    rows.push_back(fmt::format("{}:{}", i, row));
  }
  return "  peer access (row can access column): " + fmt::format("{}", fmt::join(rows, " "));
}

}  // namespace

std::vector<std::string> gpuReportText(const GpuReport& r) {
  std::vector<std::string> out;
  std::string cuda = r.cuda_compiled ? fmt::format("CUDA runtime {}, driver {}",
                                                   r.cuda_runtime.empty() ? "?" : r.cuda_runtime,
                                                   r.cuda_driver.empty() ? "none" : r.cuda_driver)
                                     : "CUDA runtime probe not compiled in";
  std::string nvml = r.nvml_error.empty() ? fmt::format("NVML driver {}",
                                                        r.nvml_driver.empty() ? "?" : r.nvml_driver)
                                          : fmt::format("NVML unknown ({})", r.nvml_error);
  out.push_back(fmt::format("gpu layer: {}; {}; probe kernel {}", cuda, nvml,
                            r.kernel_compiled ? "compiled in" : "not compiled in"));
  if (r.devices.empty()) out.push_back("  no GPU: " + r.no_gpu);
  for (const GpuDevice& d : r.devices) deviceLines(d, out);
  if (r.peer.size() > 1) out.push_back(peerLine(r));
  return out;
}

}  // namespace ccscope::diagnostics
