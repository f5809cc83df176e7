#include "diagnostics/hang/collect.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <thread>

#include "diagnostics/hang/flight_dumps.h"
#include "diagnostics/hang/gpu_use.h"
#include "diagnostics/hang/kernel_log.h"
#include "diagnostics/hang/proc_scan.h"
#include "diagnostics/hang/ras_client.h"
#include "diagnostics/live/child_process.h"

namespace ccscope::diagnostics {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string envOf(const HangProcess& p, const char* key) {
  auto it = p.env.find(key);
  return it == p.env.end() ? std::string() : it->second;
}

std::string nowUtc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string hostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// A program on PATH (or a path), or "" when there is none.
std::string findProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (end > start && access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return {};
}

bool pythonProcess(const HangProcess& p) {
  return p.torch || p.cmdline.find("python") != std::string::npos;
}

// The RAS address: the operator's, else the one the job set, else NCCL's default.
std::string rasAddress(const HangOptions& opt, const std::vector<HangProcess>& procs) {
  if (!opt.ras.empty()) return opt.ras;
  for (const auto& p : procs) {
    std::string a = envOf(p, "NCCL_RAS_ADDR");
    if (!a.empty()) return a;
  }
  return fmt::format("127.0.0.1:{}", kRasDefaultPort);
}

// Seconds after boot when the earliest of the processes started (0 when unknown).
double jobStartSeconds(const std::vector<HangProcess>& procs) {
  double earliest = 0;
  for (const auto& p : procs) {
    const double start = startAfterBoot(p.pid);
    if (start > 0 && (earliest == 0 || start < earliest)) earliest = start;
  }
  return earliest;
}

void readPySpy(const HangOptions& opt, Clock::time_point deadline, HangSnapshot& snap) {
  if (opt.py_spy == "off") {
    snap.sources.push_back({"py-spy", "skipped", "--py-spy off"});
    return;
  }
  const std::string prog = findProgram(opt.py_spy);
  if (prog.empty()) {
    snap.sources.push_back(
        {"py-spy", "unavailable",
         fmt::format("{} not found (pip install py-spy): no Python stacks", opt.py_spy)});
    return;
  }
  int read = 0, failed = 0;
  for (auto& p : snap.processes) {
    if (!pythonProcess(p)) continue;
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left < 0.2) {
      p.py_stack_error = "no time left for py-spy";
      ++failed;
      continue;
    }
    // --nonblocking: read the stacks without pausing the process.
    ChildSpec spec;
    spec.argv = {prog, "dump", "--pid", std::to_string(p.pid), "--nonblocking"};
    spec.timeout_s = std::min(left, 5.0);
    const ChildRun run = runChild(spec);
    std::string out;
    for (const auto& l : run.lines) out += l + "\n";
    if (run.ok() && out.find("Thread ") != std::string::npos) {
      p.py_stack = out;
      ++read;
    } else {
      p.py_stack_error = fmt::format("py-spy {}: {}", run.describe(),
                                     run.lines.empty() ? "" : run.lines.back().substr(0, 200));
      ++failed;
    }
  }
  if (read + failed == 0) {
    snap.sources.push_back({"py-spy", "skipped", "no Python process among them"});
  } else {
    snap.sources.push_back({"py-spy", read ? "read" : "error",
                            fmt::format("{} stack(s) read, {} not (root or ptrace permission "
                                        "needed for another user's process)",
                                        read, failed)});
  }
}

// RAS answers for the whole job and may take longest: it runs beside the rest. A thread and
// plain slots rather than a future of a Result: g++ 12 warns falsely (free-nonheap-object) on
// the latter.
struct RasReading {
  std::thread thread;
  RasAnswer answer;
  core::Status status;
};

void startRas(const HangOptions& opt, Clock::time_point t0, HangSnapshot& snap, RasReading& r) {
  if (opt.ras == "off") {
    snap.sources.push_back({"ras", "skipped", "--ras off"});
    return;
  }
  auto q = parseRasAddress(rasAddress(opt, snap.processes));
  if (!q.isOk()) {
    snap.sources.push_back({"ras", "error", q.status().message()});
    return;
  }
  snap.ras_address = fmt::format("{}:{}", q->host, q->port);
  q->timeout_s = std::max(0.5, opt.timeout_s - secondsSince(t0) - 0.5);
  r.thread = std::thread([q = *q, &r] {
    auto res = queryRas(q);
    if (res.isOk())
      r.answer = std::move(*res);
    else
      r.status = res.status();
  });
}

void finishRas(HangSnapshot& snap, RasReading& r) {
  if (!r.thread.joinable()) return;
  r.thread.join();
  if (!r.status.isOk()) {
    const bool absent = r.status.code() == core::Code::kUnavailable;
    snap.sources.push_back({"ras", absent ? "unavailable" : "error", r.status.message()});
    return;
  }
  if (r.answer.format == "json")
    snap.ras_json = r.answer.text;
  else
    snap.ras_text = r.answer.text;
  snap.sources.push_back(
      {"ras", "read",
       fmt::format("{} report from {} (protocol {}){}", r.answer.format, snap.ras_address,
                   r.answer.server_protocol, r.answer.note.empty() ? "" : "; " + r.answer.note)});
}

void readKernel(const HangOptions& opt, HangSnapshot& snap) {
  if (opt.kernel_log == "off") {
    snap.sources.push_back({"kernel-log", "skipped", "--kernel-log off"});
    return;
  }
  const KernelLog kl =
      readKernelLog(opt.kernel_log, opt.kernel_log.empty() ? jobStartSeconds(snap.processes) : 0);
  snap.kernel_log = kl.lines;
  snap.sources.push_back(
      {"kernel-log", kl.error.empty() ? "read" : "unavailable",
       kl.error.empty()
           ? fmt::format("{} GPU/RDMA/OOM line(s) since the job started", kl.lines.size())
           : kl.error});
}

}  // namespace

core::Result<HangSnapshot> collectHang(const HangOptions& opt) {
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::milliseconds(static_cast<long>(opt.timeout_s * 1000));
  HangSnapshot snap;
  snap.node = hostName();
  snap.taken_at = nowUtc();
  snap.timeout_s = opt.timeout_s;

  ProcScanOptions scan_opt;
  scan_opt.pids = opt.pids;
  scan_opt.sample_s = opt.sample_s;
  scan_opt.job = opt.job;
  ProcScan scan = scanProcesses(scan_opt);
  if (!scan.choices.empty()) {
    std::string list;
    for (const auto& c : scan.choices) list += (list.empty() ? "" : "; ") + c;
    return core::Status(
        core::Code::kInvalidArgument,
        opt.job.empty()
            ? fmt::format("{} jobs run on this node: {}; choose one with --job "
                          "(part of its key) or --pid",
                          scan.choices.size(), list)
            : fmt::format("--job '{}' must name exactly one of the jobs here: {}", opt.job, list));
  }
  snap.processes = std::move(scan.processes);
  std::string detail = fmt::format("{} rank process(es)", snap.processes.size());
  if (scan.jobs.size() > 1) detail += fmt::format(" of {} jobs", scan.jobs.size());
  for (const auto& pr : scan.problems) detail += "; " + pr;
  snap.sources.push_back({"processes", snap.processes.empty() ? "unavailable" : "read",
                          snap.processes.empty()
                              ? "no process with a rank in its environment (RANK, "
                                "OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID with NCCL): pass "
                                "--pid, or run as the job's user or root"
                              : detail});
  if (!snap.processes.empty()) {
    snap.sources.push_back(
        {"kernel-stacks", scan.kernel_stacks ? "read" : "unavailable",
         scan.kernel_stacks ? "per-thread kernel stacks" : "/proc/PID/task/TID/stack needs root"});
  }

  RasReading ras;
  startRas(opt, t0, snap, ras);
  readPySpy(opt, deadline - std::chrono::milliseconds(500), snap);
  readFlightRecorder(opt.trigger_flight_recorder, deadline - std::chrono::milliseconds(500), snap);
  if (!snap.processes.empty()) readGpuUse(opt.sample_s, snap);

  readKernel(opt, snap);
  snap.rdma_devices = rdmaDevices();

  finishRas(snap, ras);
  snap.seconds = secondsSince(t0);
  return snap;
}

bool hasEvidence(const HangSnapshot& s) {
  return !s.processes.empty() || !s.ras_text.empty() || !s.ras_json.empty() ||
         !s.kernel_log.empty();
}

}  // namespace ccscope::diagnostics
