#include "diagnostics/live/gpu_layer.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <thread>

#include "diagnostics/live/optional_text.h"

namespace ccscope::diagnostics {

using core::Layer;
using nlohmann::json;
using transports::GpuDevice;
using transports::GpuReport;
using transports::GpuSeverity;

namespace {

constexpr size_t kMaxChildLines = 64;
constexpr size_t kMaxUnknownNamed = 6;

// "ok 12.3 ms" from "ccscope-gpu: ok 12.3 ms"; "" when the child never printed `key`.
std::string probeLine(const ChildRun& run, const std::string& key) {
  const std::string prefix = std::string(transports::kGpuProbeLinePrefix) + " " + key;
  for (const auto& l : run.lines)
    if (l.rfind(prefix, 0) == 0) return l.substr(prefix.size() + (l.size() > prefix.size()));
  return {};
}

bool probes(const GpuLayerOptions& o, const GpuDevice& d) {
  return d.cuda_index >= 0 && (o.share_of <= 0 || d.cuda_index % o.share_of == o.share_index);
}

json readingsJson(const transports::NvmlReading& n) {
  json j;
  j["memory"] = {{"total", orNull(n.mem_total)}, {"used", orNull(n.mem_used)}};
  j["ecc"] = {{"enabled", orNull(n.ecc_enabled)},
              {"corrected", orNull(n.ecc_corrected)},
              {"uncorrected", orNull(n.ecc_uncorrected)},
              {"corrected_aggregate", orNull(n.ecc_corrected_aggregate)},
              {"uncorrected_aggregate", orNull(n.ecc_uncorrected_aggregate)}};
  j["retired_pages"] = {{"single_bit", orNull(n.retired_sbe)},
                        {"double_bit", orNull(n.retired_dbe)},
                        {"pending", orNull(n.retirement_pending)}};
  j["remapped_rows"] = nullptr;
  if (n.remapped)
    j["remapped_rows"] = {{"correctable", n.remapped->correctable},
                          {"uncorrectable", n.remapped->uncorrectable},
                          {"pending", n.remapped->pending},
                          {"failure", n.remapped->failure}};
  j["pcie"] = {{"gen", orNull(n.pcie_gen)},
               {"gen_max", orNull(n.pcie_gen_max)},
               {"width", orNull(n.pcie_width)},
               {"width_max", orNull(n.pcie_width_max)}};
  j["nvlink"] = n.nvlink_known ? json{{"up", n.nvlink_up}, {"down", n.nvlink_down}} : json();
  return j;
}

json deviceJson(const GpuDevice& d) {
  json j = {{"cuda_index", d.cuda_index},     {"bus_id", d.bus_id},   {"name", d.name},
            {"kernel_probe", d.kernel_probe}, {"unknown", d.unknown}, {"findings", json::array()}};
  for (const auto& f : d.findings)
    j["findings"].push_back({{"severity", transports::severityName(f.severity)}, {"text", f.text}});
  j["nvml"] = d.nvml_read ? readingsJson(d.nvml) : json();
  return j;
}

}  // namespace

void judgeKernelRun(const ChildRun& run, double timeout_s, GpuDevice& d) {
  auto fault = [&](const std::string& text) {
    d.kernel_probe = text;
    d.findings.push_back({GpuSeverity::kFault, "kernel probe: " + text});
  };
  if (!run.started) {
    d.kernel_probe = "not run: " + run.start_error;
    d.unknown.push_back(fmt::format("kernel probe (could not start: {})", run.start_error));
  } else if (run.timed_out) {
    fault(fmt::format("a kernel and a 4 MiB copy did not finish within {:.1f} s (killed)",
                      timeout_s));
  } else if (run.exit_code == transports::kGpuProbeNotCompiled && !probeLine(run, "skip").empty()) {
    d.kernel_probe = "not compiled in";
    d.unknown.push_back("kernel probe (" + probeLine(run, "skip") + ")");
  } else if (!run.ok()) {
    std::string err = probeLine(run, "error");
    fault(err.empty() ? "the probe " + run.describe() : err);
  } else {
    d.kernel_probe = "ok in " + probeLine(run, "ok");
  }
}

GpuReport runGpuLayer(const GpuLayerOptions& o) {
  GpuReport r = transports::probeGpus();
  std::vector<ChildRun> runs(r.devices.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < r.devices.size(); ++k) {
    GpuDevice& d = r.devices[k];
    if (d.cuda_index < 0) continue;
    if (!probes(o, d)) {
      d.kernel_probe = "run by another rank on this host";
    } else if (!r.kernel_compiled || o.child_command.empty()) {
      d.kernel_probe = "not compiled in";
      d.unknown.push_back("kernel probe (not compiled in: nvcc not found at build time)");
    } else {  // side by side: one hung GPU costs one deadline, not one per device after it
      threads.emplace_back([&o, &runs, k, index = d.cuda_index] {
        ChildSpec spec;
        spec.argv = o.child_command;
        spec.argv.push_back(std::to_string(index));
        spec.timeout_s = o.timeout_s;
        spec.max_lines = kMaxChildLines;
        runs[k] = runChild(spec);
      });
    }
  }
  for (auto& t : threads) t.join();
  for (size_t k = 0; k < r.devices.size(); ++k)
    if (r.devices[k].kernel_probe.empty() && r.devices[k].cuda_index >= 0)
      judgeKernelRun(runs[k], o.timeout_s, r.devices[k]);
  return r;
}

json gpuReportJson(const GpuReport& r) {
  json j = {{"cuda_compiled", r.cuda_compiled},
            {"kernel_compiled", r.kernel_compiled},
            {"cuda_runtime", r.cuda_runtime},
            {"cuda_driver", r.cuda_driver},
            {"no_gpu", r.no_gpu},
            {"nvml_error", r.nvml_error},
            {"nvml_driver", r.nvml_driver},
            {"peer_access", r.peer},
            {"devices", json::array()}};
  for (const GpuDevice& d : r.devices) j["devices"].push_back(deviceJson(d));
  return j;
}

namespace {

// Every rank's devices, once per host and bus id (ranks on one host read the same GPUs).
struct GpuTally {
  std::set<std::string> devices, lines, unknown;
  std::vector<std::string> faults, warnings;
  int kernel_ok = 0;
  std::string no_gpu;
  void add(const json& g, int rank, const std::vector<std::string>& hosts, ProbeResult& r) {
    if (!g.is_object()) return;
    if (no_gpu.empty()) no_gpu = g.value("no_gpu", std::string());
    for (const json& d : g.value("devices", json::array())) {
      std::string bus = d.value("bus_id", std::string());
      std::string key = hostOf(rank, hosts) + "|" + bus;
      devices.insert(key);
      if (d.value("kernel_probe", std::string()).rfind("ok", 0) == 0) ++kernel_ok;
      int index = d.value("cuda_index", -1);
      std::string label = index >= 0 ? fmt::format("GPU {} ({})", index, bus)
                                     : fmt::format("GPU ({}, not visible to CUDA)", bus);
      for (const json& f : d.value("findings", json::array())) {
        std::string text = f.value("text", std::string());
        if (!lines.insert(fmt::format("{}|{}", key, text)).second) continue;
        std::string line = fmt::format("{}: {}: {}", rankLabel(rank, hosts), label, text);
        bool is_fault = f.value("severity", std::string()) == "fault";
        (is_fault ? faults : warnings).push_back(line);
        if (!is_fault) continue;
        r.culprit.ranks.push_back(rank);
        if (rank < static_cast<int>(hosts.size())) r.culprit.hosts.push_back(hosts[rank]);
      }
      for (const json& u : d.value("unknown", json::array()))
        unknown.insert(u.get<std::string>().substr(0, u.get<std::string>().find(" (")));
    }
  }
};

}  // namespace

ProbeResult judgeGpuLayer(const std::vector<json>& per_rank,
                          const std::vector<std::string>& hosts) {
  ProbeResult r{Layer::kGpu, "gpu devices", ProbeOutcome::kSkip, "", {}, {}, {}};
  GpuTally t;
  for (size_t k = 0; k < per_rank.size(); ++k) t.add(per_rank[k], static_cast<int>(k), hosts, r);
  if (t.devices.empty()) {
    r.detail =
        fmt::format("skipped: no GPU ({})", t.no_gpu.empty() ? "no rank reported" : t.no_gpu);
    return r;
  }
  if (!applyFindings(
          r, t.faults, t.warnings,
          "Inspect the named GPU (nvidia-smi -q -i <bus id>: ECC, retired pages, remapped rows, "
          "PCIe link); drain it from the job, reset or replace it, then rerun ccscope diagnose.")) {
    r.outcome = ProbeOutcome::kPass;
    r.detail = fmt::format("{} GPU(s), kernel and copy ok on {}; no ECC, PCIe or NVLink fault",
                           t.devices.size(), t.kernel_ok);
  }
  if (!t.unknown.empty()) {
    std::vector<std::string> names(t.unknown.begin(), t.unknown.end());
    if (names.size() > kMaxUnknownNamed) {
      names.resize(kMaxUnknownNamed);
      names.push_back("...");
    }
    r.detail += fmt::format("; unknown: {}", fmt::join(names, ", "));
  }
  return r;
}

}  // namespace ccscope::diagnostics
