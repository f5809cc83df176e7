#include "diagnostics/analyze/hang_tracker.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <sstream>

namespace ccscope::diagnostics {
namespace {

constexpr int kGpuBusyPercent = 50;
constexpr int kGpuIdlePercent = 5;
constexpr double kSpinningPercent = 50;

struct Frame {
  std::string func, file, text;
};

bool contains(const std::string& s, const char* w) { return s.find(w) != std::string::npos; }

// The frames of py-spy's "MainThread" (else its first thread), innermost first:
//   Thread 581 (idle): "MainThread"
//       load_batch (train.py:42)
std::vector<Frame> mainThreadFrames(const std::string& dump) {
  std::vector<std::vector<Frame>> threads;
  int main_index = -1;
  std::istringstream in(dump);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Thread ", 0) == 0) {
      threads.emplace_back();
      if (main_index < 0 && contains(line, "\"MainThread\""))
        main_index = static_cast<int>(threads.size()) - 1;
      continue;
    }
    if (threads.empty() || line.rfind("    ", 0) != 0 || line.rfind("        ", 0) == 0) continue;
    Frame f;
    f.text = line.substr(4);
    const size_t open = f.text.rfind(" (");
    f.func = f.text.substr(0, open);
    if (open != std::string::npos && f.text.back() == ')')
      f.file = f.text.substr(open + 2, f.text.size() - open - 3);
    threads.back().push_back(std::move(f));
  }
  if (threads.empty()) return {};
  return threads[static_cast<size_t>(main_index >= 0 ? main_index : 0)];
}

bool communicationFrame(const Frame& f) {
  static const char* const kFuncs[] = {"all_reduce",
                                       "all_gather",
                                       "reduce_scatter",
                                       "broadcast",
                                       "barrier",
                                       "all_to_all",
                                       "send",
                                       "recv",
                                       "isend",
                                       "irecv",
                                       "gather",
                                       "scatter",
                                       "reduce",
                                       "monitored_barrier",
                                       "batch_isend_irecv"};
  if (contains(f.file, "torch/distributed/") || contains(f.func, "c10d::") ||
      contains(f.func, "nccl") || contains(f.file, "libnccl")) {
    return true;
  }
  for (const char* name : kFuncs) {
    if (f.func == name || (f.func.rfind(name, 0) == 0 && contains(f.func, "_coalesced")))
      return contains(f.file, "distributed") || f.file.empty();
  }
  return false;
}

bool gpuWaitFrame(const Frame& f) {
  static const char* const kNative[] = {"cudaStreamSynchronize",
                                        "cuStreamSynchronize",
                                        "cudaDeviceSynchronize",
                                        "cuCtxSynchronize",
                                        "cudaEventSynchronize",
                                        "cuEventSynchronize",
                                        "cudaMemcpy",
                                        "cuMemcpyDtoH"};
  if (f.func == "synchronize" && contains(f.file, "torch/cuda")) return true;
  for (const char* n : kNative)
    if (f.func.rfind(n, 0) == 0) return true;
  return false;
}

bool libraryFile(const std::string& file) {
  return file.empty() || contains(file, "site-packages/") || contains(file, "dist-packages/") ||
         contains(file, "/lib/python3") || file.front() == '<' || contains(file, ".so");
}

bool gpuDriverWait(const HangThread& t) {
  if (t.state != 'D') return false;
  if (contains(t.wchan, "nv") || contains(t.wchan, "uvm")) return true;
  return std::any_of(t.kernel_stack.begin(), t.kernel_stack.end(), [](const std::string& f) {
    return contains(f, "[nvidia") || contains(f, "uvm_") || contains(f, "os_acquire");
  });
}

const HangThread* mainThread(const HangProcess& p) {
  for (const auto& t : p.threads)
    if (t.tid == p.pid) return &t;
  return p.threads.empty() ? nullptr : &p.threads.front();
}

std::string gpuText(const HangProcess& p) {
  if (p.gpu_sm_percent) return fmt::format("GPU {}% SM", *p.gpu_sm_percent);
  return "GPU use unknown";
}

std::string threadText(const HangProcess& p) {
  const HangThread* t = mainThread(p);
  if (t == nullptr) return fmt::format("state {}", p.state);
  std::string out = fmt::format("main thread {}", t->state);
  if (!t->wchan.empty()) out += " in " + t->wchan;
  if (t->cpu_percent >= 0) out += fmt::format(", {:.0f}% CPU", t->cpu_percent);
  return out;
}

std::string listRanks(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size() && i < 8; ++i) {
    if (i) out += ',';
    out += std::to_string(ranks[i]);
  }
  if (ranks.size() > 8) out += ",...";
  return out;
}

// The activity a Python stack shows (false without one): the main thread's frames, innermost
// first.
bool fromPythonStack(const HangProcess& p, ProcessActivity& out) {
  const std::vector<Frame> frames = mainThreadFrames(p.py_stack);
  if (frames.empty()) return false;
  const HangThread* main = mainThread(p);
  const Frame* user = nullptr;
  for (const auto& f : frames) {
    if (!user && !libraryFile(f.file)) user = &f;
  }
  const std::string at = user ? user->text : frames.front().text;
  out.summary += fmt::format("; Python: {}{}", frames.front().text,
                             user && user != &frames.front() ? " <- " + user->text : "");
  for (const auto& f : frames) {
    if (communicationFrame(f)) {
      out.activity = Activity::kInCollective;
      out.where = f.text;
      return true;
    }
    if (gpuWaitFrame(f)) {
      out.activity = Activity::kWaitingOnGpu;
      out.where = fmt::format("{} called from {}", f.text, at);
      return true;
    }
  }
  // In the program's own code: where the GPU use does not say it waits on a kernel.
  if (p.gpu_sm_percent && *p.gpu_sm_percent >= kGpuBusyPercent && main &&
      main->cpu_percent >= kSpinningPercent) {
    out.activity = Activity::kWaitingOnGpu;
    out.where = fmt::format("{} with its GPU busy", at);
    return true;
  }
  out.activity = Activity::kHostCode;
  out.where = at;
  return true;
}

// " (AllReduce)" when the dumps or RAS say which collective #seq is.
std::string opName(const ProgressTracker& progress, long seq) {
  const std::string op = progress.opAt(seq);
  return op.empty() ? std::string() : " (" + op + ")";
}

}  // namespace

const char* activityName(Activity a) {
  switch (a) {
    case Activity::kInCollective:
      return "in a collective";
    case Activity::kWaitingOnGpu:
      return "waiting on its GPU";
    case Activity::kHostCode:
      return "in host code";
    case Activity::kDriverBlocked:
      return "blocked in the GPU driver";
    case Activity::kExited:
      return "exited";
    case Activity::kUnknown:
      break;
  }
  return "unknown";
}

ProcessActivity classifyProcess(const HangProcess& p) {
  ProcessActivity out;
  const std::string threads = threadText(p);
  out.summary = fmt::format("rank {} pid {}: {}; {}", p.rank, p.pid, threads, gpuText(p));
  if (p.state == 'Z' || p.state == 'X') {
    out.activity = Activity::kExited;
    out.where = p.state == 'Z' ? "exited (a zombie: its parent has not reaped it)" : "exited";
    return out;
  }
  for (const auto& t : p.threads) {
    if (gpuDriverWait(t)) {
      out.activity = Activity::kDriverBlocked;
      out.where = fmt::format("thread {} ({}) in uninterruptible sleep in {}", t.tid, t.name,
                              t.wchan.empty() ? "the GPU driver" : t.wchan);
      out.summary += "; " + out.where;
      return out;
    }
  }
  if (fromPythonStack(p, out)) return out;
  if (p.gpu_sm_percent) {
    if (*p.gpu_sm_percent >= kGpuBusyPercent) {
      out.activity = Activity::kWaitingOnGpu;
      out.where = fmt::format("its GPU busy ({}% SM), {}", *p.gpu_sm_percent, threads);
    } else if (*p.gpu_sm_percent <= kGpuIdlePercent) {
      out.activity = Activity::kHostCode;
      out.where = fmt::format("its GPU idle ({}% SM), {}", *p.gpu_sm_percent, threads);
    }
  }
  return out;
}

void HangTracker::addProcess(const std::string& node, const HangProcess& p,
                             const std::string& file) {
  if (p.rank < 0 || ranks_.count(p.rank) || ranks_.size() >= 16384) return;
  Seen s{node, file, p, classifyProcess(p)};
  s.process.py_stack.clear();  // classified; the text is not needed again
  s.process.fr_dump.clear();
  ranks_.emplace(p.rank, std::move(s));
}

std::vector<Event> HangTracker::conclude(const ProgressTracker& progress) const {
  std::vector<Event> out;
  long lo = -1, hi = -1;
  const std::vector<int> behind = progress.behind(&lo, &hi);
  auto event = [&](const FindingSpec& spec, int rank, const Seen& s, std::string verdict) {
    Event e;
    e.spec = &spec;
    e.rank = rank;
    e.host = s.node;
    e.verdict = std::move(verdict);
    e.evidence.push_back({s.file, 0, s.activity.summary});
    out.push_back(std::move(e));
  };
  const std::string waiting_in =
      hi >= 0 ? fmt::format("; the others wait in collective #{}", hi) : std::string();
  for (const auto& [rank, s] : ranks_) {
    const bool is_behind = std::find(behind.begin(), behind.end(), rank) != behind.end();
    const auto& a = s.activity;
    switch (a.activity) {
      case Activity::kExited:
        event(rankExitedSpec(), rank, s, fmt::format("rank {} {}{}", rank, a.where, waiting_in));
        break;
      case Activity::kDriverBlocked:
        event(rankInGpuDriverSpec(), rank, s,
              fmt::format("rank {}: {}{}", rank, a.where, is_behind ? waiting_in : ""));
        break;
      case Activity::kHostCode:
        if (is_behind) {
          event(rankInHostCodeSpec(), rank, s,
                fmt::format("rank {} never issued collective #{}{}: it is in its own code at {}, "
                            "not in a collective (the other ranks reached #{})",
                            rank, lo + 1, opName(progress, lo + 1), a.where, hi));
        }
        break;
      case Activity::kWaitingOnGpu:
        if (is_behind) {
          event(rankStuckOnGpuSpec(), rank, s,
                fmt::format("rank {} never issued collective #{}{}: it waits on its GPU outside "
                            "any collective ({}); the other ranks reached #{}",
                            rank, lo + 1, opName(progress, lo + 1), a.where, hi));
        }
        break;
      default:
        if (is_behind) {
          event(rankStateSpec(), rank, s,
                fmt::format("rank {} (behind): {}", rank, s.activity.summary));
        }
        break;
    }
  }
  if (behind.empty() && ranks_.size() >= 2) {
    if (auto e = allInCollective(lo, hi)) out.push_back(std::move(*e));
  }
  return out;
}

// Nobody behind: every rank in a communication call (or spinning with its GPU busy).
std::optional<Event> HangTracker::allInCollective(long lo, long hi) const {
  std::vector<int> in_collective;
  for (const auto& [rank, s] : ranks_) {
    const Activity a = s.activity.activity;
    if (a == Activity::kInCollective || a == Activity::kWaitingOnGpu) in_collective.push_back(rank);
  }
  if (in_collective.size() != ranks_.size()) return std::nullopt;
  bool sockets = false;
  for (const auto& [rank, s] : ranks_) {
    const auto& env = s.process.env;
    auto var = [&env](const char* k) {
      auto it = env.find(k);
      return it == env.end() ? std::string() : it->second;
    };
    if (var("NCCL_IB_DISABLE") == "1" || var("NCCL_NET") == "Socket") sockets = true;
  }
  const core::Layer layer =
      rdma_devices_ > 0 && !sockets ? core::Layer::kRdma : core::Layer::kHostNetwork;
  Event e;
  e.spec = &allInCollectiveSpec(layer);
  e.verdict = fmt::format(
      "all {} ranks seen ({}) are inside a collective{} and none completes: the data stopped "
      "moving between them",
      ranks_.size(), listRanks(in_collective), lo >= 0 ? fmt::format(" (#{})", hi) : "");
  for (const auto& [rank, s] : ranks_) {
    if (e.evidence.size() < 3) e.evidence.push_back({s.file, 0, s.activity.summary});
  }
  return e;
}

}  // namespace ccscope::diagnostics
