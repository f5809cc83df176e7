#include "app/hang_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "diagnostics/analyze/analyzer.h"
#include "diagnostics/analyze/hang_tracker.h"
#include "diagnostics/analyze/text_report.h"
#include "diagnostics/hang/collect.h"

namespace ccscope::app {
namespace {

struct HangCliOptions {
  diagnostics::HangOptions collect;
  std::string json_path;
};

std::string sourcesText(const diagnostics::HangSnapshot& s) {
  std::string out = fmt::format("Sources on {} ({:.1f} s):\n", s.node, s.seconds);
  for (const auto& src : s.sources)
    out += fmt::format("  {:<16} {:<12} {}\n", src.name, src.status, src.detail);
  return out;
}

std::string processesText(const diagnostics::HangSnapshot& s) {
  if (s.processes.empty()) return {};
  std::string out = "Processes:\n";
  for (const auto& p : s.processes) {
    const auto a = diagnostics::classifyProcess(p);
    out += fmt::format("  rank {:<4} pid {:<8} {:<26} {}\n", p.rank, p.pid,
                       diagnostics::activityName(a.activity),
                       a.summary.substr(a.summary.find(':') + 2));
  }
  return out;
}

int runHang(const HangCliOptions& opt) {
  if (opt.collect.timeout_s <= 0 || opt.collect.timeout_s > 3600) {
    std::fprintf(stderr, "ccscope hang: --timeout must be in (0, 3600] seconds\n");
    return kExitUsage;
  }
  auto collected = diagnostics::collectHang(opt.collect);
  if (!collected.isOk()) {
    std::fprintf(stderr, "ccscope hang: %s\n", collected.status().message().c_str());
    return kExitUsage;
  }
  diagnostics::HangSnapshot& snap = *collected;
  auto analyzer = diagnostics::Analyzer::create({});
  if (!analyzer.isOk()) {
    std::fprintf(stderr, "ccscope hang: %s\n", analyzer.status().message().c_str());
    return kExitUsage;
  }
  (*analyzer)->analyzeSnapshot(snap, snap.node);
  const reports::Diagnosis d = (*analyzer)->finish();
  const bool json_to_stdout = opt.json_path == "-";
  if (!opt.json_path.empty()) {
    nlohmann::json doc = diagnostics::toJson(snap);
    doc["diagnosis"] = reports::toJson(d);
    const std::string text =
        doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (json_to_stdout) {
      std::cout << text;
    } else {
      std::ofstream out(opt.json_path);
      if (!(out << text)) {
        std::fprintf(stderr, "ccscope hang: cannot write %s\n", opt.json_path.c_str());
        return kExitUsage;
      }
    }
  }
  std::ostream& os = json_to_stdout ? std::cerr : std::cout;
  os << sourcesText(snap) << processesText(snap) << "\n";
  if (!diagnostics::hasEvidence(snap)) {
    os << "ccscope hang: nothing to examine on this node: no process of a job was found and NCCL "
          "RAS did not answer (pass --pid PID, or --ras HOST:PORT of a node that runs the job)\n";
    return kExitMissing;
  }
  os << diagnostics::renderText(d, {}, "Verdict from the sources read");
  return d.conclusive ? kExitHang : kExitFailed;
}

}  // namespace

Command addHangCommand(CLI::App& root) {
  auto opt = std::make_shared<HangCliOptions>();
  CLI::App* sub = root.add_subcommand(
      "hang",
      "Live: look into a running, hung job on this node (its processes, NCCL RAS, py-spy, "
      "Flight Recorder, NVML, the kernel log) without stopping it, and name the layer and rank");
  sub->add_option("--pid", opt->collect.pids,
                  "The job's processes (repeatable; default: every process whose environment "
                  "names a rank)");
  sub->add_option("--job", opt->collect.job,
                  "Where several jobs run on this node: the one whose key (printed when there "
                  "are several: \"torch ADDR:PORT\", \"slurm JOB.STEP\") holds this text");
  sub->add_option("--ras", opt->collect.ras,
                  "NCCL RAS address HOST:PORT (default: the job's NCCL_RAS_ADDR, else "
                  "127.0.0.1:28028); off to skip");
  sub->add_option("--json", opt->json_path,
                  "Write what was read and the verdict as JSON to FILE (- for stdout); "
                  "`ccscope analyze` merges the files of several nodes");
  sub->add_option("--timeout", opt->collect.timeout_s,
                  "Seconds for everything, RAS's job-wide report included (default 10)");
  sub->add_option("--kernel-log", opt->collect.kernel_log,
                  "A saved dmesg text to read instead of /dev/kmsg; off to skip");
  sub->add_option("--py-spy", opt->collect.py_spy,
                  "The py-spy program (default: py-spy on PATH); off to skip");
  sub->add_option("--sample", opt->collect.sample_s,
                  "Seconds over which CPU and GPU use are measured (default 0.5)");
  sub->add_flag("!--no-flight-recorder", opt->collect.trigger_flight_recorder,
                "Do not ask for Flight Recorder dumps through the job's pipe "
                "(TORCH_NCCL_DEBUG_INFO_PIPE_FILE)");
  return {sub, [opt] { return runHang(*opt); }};
}

}  // namespace ccscope::app
