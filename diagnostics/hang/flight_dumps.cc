#include "diagnostics/hang/flight_dumps.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <thread>

#include "diagnostics/analyze/flight_recorder.h"
#include "diagnostics/analyze/pickle_reader.h"

namespace ccscope::diagnostics {
namespace {

std::string processEnv(const HangProcess& p, const char* key) {
  auto it = p.env.find(key);
  return it == p.env.end() ? std::string() : it->second;
}

// When a process started, in seconds since the epoch (0 when unknown): boot time + start.
double startEpoch(int pid) {
  std::ifstream in("/proc/stat");
  std::string key;
  double btime = 0;
  while (in >> key) {
    if (key == "btime") {
      in >> btime;
      break;
    }
  }
  const double start = startAfterBoot(pid);
  return btime > 0 && start > 0 ? btime + start : 0;
}

// The dump file PyTorch writes for `p` (the on-timeout dump, or one the pipe asked for).
std::string dumpPath(const HangProcess& p) {
  std::string stem = processEnv(p, "TORCH_FR_DUMP_TEMP_FILE");
  if (stem.empty()) stem = processEnv(p, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE");
  if (stem.empty()) stem = "/tmp/nccl_trace_rank_";
  return p.rank >= 0 ? stem + std::to_string(p.rank) : std::string();
}

// A Flight Recorder dump (pickle or JSON) as JSON text in `out`; false with `why` otherwise.
bool readDump(const std::string& path, std::string& out, std::string& why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && static_cast<size_t>(st.st_size) > kMaxJsonDocumentBytes) {
    why = fmt::format("{}: larger than {} MiB, not read", path, kMaxJsonDocumentBytes >> 20);
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = fmt::format("{}: {}", path, std::strerror(errno));
    return false;
  }
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  nlohmann::json doc;
  if (looksLikePickle(data)) {
    auto decoded = decodePickle(data);
    if (!decoded.isOk()) {
      PickleOptions repair;
      repair.repair_string_lengths = true;
      decoded = decodePickle(data, repair);
    }
    if (!decoded.isOk()) {
      why = fmt::format("{}: {}", path, decoded.status().message());
      return false;
    }
    doc = std::move(*decoded);
  } else {
    doc = nlohmann::json::parse(data, nullptr, false);
  }
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("entries")) {
    why = path + ": not a Flight Recorder dump (pickle or JSON)";
    return false;
  }
  out = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return true;
}

double mtimeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1e9;
}

// The process's dump, when one was written since it started: an older file is another run's.
bool readProcessDump(HangProcess& p) {
  const std::string path = dumpPath(p);
  const double mtime = path.empty() ? -1 : mtimeOf(path);
  if (mtime < 0) {
    if (p.fr_source.empty())
      p.fr_source = "no dump (" + (path.empty() ? "rank unknown" : path) + ")";
    return false;
  }
  const double started = startEpoch(p.pid);
  if (started > 0 && mtime < started) {
    p.fr_source = path + ": written before this process started (another run's): ignored";
    return false;
  }
  std::string why;
  if (readDump(path, p.fr_dump, why)) {
    p.fr_source = path;
    return true;
  }
  p.fr_source = why;
  return false;
}

}  // namespace

// Seconds after boot when a process started (0 when unknown): /proc/PID/stat's field 22.
double startAfterBoot(int pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return 0;
  const char* s = text.c_str() + close + 2;
  for (int field = 0; field < 19 && s; ++field) {  // starttime is the 20th after the command
    s = std::strchr(s, ' ');
    if (s) ++s;
  }
  if (!s) return 0;
  return static_cast<double>(std::strtoull(s, nullptr, 10)) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

void readFlightRecorder(bool trigger, std::chrono::steady_clock::time_point deadline,
                        HangSnapshot& snap) {
  int triggered = 0, read = 0;
  std::vector<std::pair<HangProcess*, double>> waiting;  // triggered: the mtime before
  for (auto& p : snap.processes) {
    const std::string pipe_stem = processEnv(p, "TORCH_NCCL_DEBUG_INFO_PIPE_FILE");
    if (!trigger || pipe_stem.empty() || p.rank < 0) continue;
    const std::string pipe = pipe_stem + std::to_string(p.rank) + ".pipe";
    const int fd = ::open(pipe.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      p.fr_source = fmt::format("pipe {}: {}", pipe, std::strerror(errno));
      continue;
    }
    const bool ok = ::write(fd, "1", 1) == 1;
    ::close(fd);
    if (!ok) {
      p.fr_source = fmt::format("pipe {}: write failed", pipe);
      continue;
    }
    ++triggered;
    waiting.emplace_back(&p, mtimeOf(dumpPath(p)));
  }
  // PyTorch's heartbeat thread writes the dump; wait for the files to change.
  while (!waiting.empty() && std::chrono::steady_clock::now() < deadline) {
    for (auto it = waiting.begin(); it != waiting.end();) {
      const double m = mtimeOf(dumpPath(*it->first));
      if (m > it->second) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the write finish
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
    if (!waiting.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (auto& p : snap.processes)
    if (readProcessDump(p)) ++read;
  std::string detail = fmt::format("{} dump(s) read", read);
  if (triggered) detail += fmt::format(", {} asked for through the job's pipe", triggered);
  if (!waiting.empty()) detail += fmt::format(", {} not written in time", waiting.size());
  if (read == 0 && triggered == 0)
    detail += " (the job did not set TORCH_NCCL_DEBUG_INFO_PIPE_FILE and wrote none on a timeout)";
  snap.sources.push_back({"flight-recorder", read ? "read" : "unavailable", detail});
}

}  // namespace ccscope::diagnostics
