#include "diagnostics/hang/proc_scan.h"

#include <dirent.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "diagnostics/hang/job_choice.h"

namespace ccscope::diagnostics {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

constexpr size_t kMaxFileBytes = 4 << 20;
constexpr size_t kMaxThreads = 512;
constexpr size_t kMaxStackFrames = 32;

// The whole of a small /proc file; false with errno kept when it cannot be read.
bool readFile(const std::string& path, std::string& out) {
  out.clear();
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  char buf[8192];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<size_t>(in.gcount()));
    if (out.size() > kMaxFileBytes) break;
  }
  return !in.bad();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

int toInt(const std::string& s, int dflt = -1) {
  if (s.empty() || s.size() > 9) return dflt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return dflt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::vector<int> numericEntries(const std::string& dir) {
  std::vector<int> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const int n = toInt(e->d_name);
    if (n > 0) out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

struct StatLine {
  bool ok = false;
  std::string comm;
  char state = '?';
  int ppid = 0;
  unsigned long long ticks = 0;  // utime + stime
};

// /proc/PID/stat: the command sits in parentheses and may hold spaces and parentheses itself.
StatLine readStat(const std::string& path) {
  StatLine s;
  std::string text;
  if (!readFile(path, text)) return s;
  const size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return s;
  s.comm = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> f;
  std::string tok;
  while (rest >> tok && f.size() < 20) f.push_back(tok);
  if (f.size() < 13) return s;
  s.state = f[0].empty() ? '?' : f[0][0];
  s.ppid = toInt(f[1], 0);
  s.ticks = std::strtoull(f[11].c_str(), nullptr, 10) + std::strtoull(f[12].c_str(), nullptr, 10);
  s.ok = true;
  return s;
}

Env readEnviron(const std::string& path, bool& ok) {
  Env env;
  std::string text;
  ok = readFile(path, text);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    const std::string kv = text.substr(start, end - start);
    const size_t eq = kv.find('=');
    if (eq != std::string::npos && eq > 0) env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    start = end + 1;
  }
  return env;
}

std::string scanEnvValue(const Env& env, const std::string& key) {
  for (const auto& [k, v] : env)
    if (k == key) return v;
  return {};
}

bool keptVariable(const std::string& k) {
  static const char* const kPrefixes[] = {"NCCL_", "TORCH_", "OMPI_COMM_WORLD_", "PMIX_", "UCX_"};
  static const std::set<std::string> kNames = {"RANK",
                                               "LOCAL_RANK",
                                               "WORLD_SIZE",
                                               "LOCAL_WORLD_SIZE",
                                               "GROUP_RANK",
                                               "MASTER_ADDR",
                                               "MASTER_PORT",
                                               "TORCHELASTIC_RUN_ID",
                                               "CUDA_VISIBLE_DEVICES",
                                               "PMI_RANK",
                                               "PMI_SIZE",
                                               "SLURM_JOB_ID",
                                               "SLURM_STEP_ID",
                                               "SLURM_PROCID",
                                               "SLURM_LOCALID",
                                               "SLURM_NTASKS",
                                               "SLURMD_NODENAME",
                                               "HOSTNAME"};
  if (kNames.count(k)) return true;
  for (const char* p : kPrefixes)
    if (k.rfind(p, 0) == 0) return true;
  return false;
}

std::string cmdlineOf(const std::string& path) {
  std::string text;
  if (!readFile(path, text)) return {};
  for (char& c : text)
    if (c == '\0') c = ' ';
  return trim(text).substr(0, 1024);
}

struct Candidate {
  HangProcess p;
  bool env_ok = false;
  bool has_rank_env = false;  // torch or MPI rank variables, not Slurm's alone
};

void readMaps(const std::string& path, HangProcess& p) {
  std::ifstream in(path);
  std::string line;
  size_t lines = 0;
  while (std::getline(in, line) && ++lines < 200000) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string file = line.substr(slash);
    const size_t base = file.rfind('/');
    const std::string name = file.substr(base + 1);
    if (p.nccl_library.empty() && name.rfind("libnccl.so", 0) == 0) p.nccl_library = file;
    if (!p.torch && (name.rfind("libtorch", 0) == 0 || name.rfind("libc10", 0) == 0))
      p.torch = true;
  }
}

void readStatus(const std::string& path, HangProcess& p) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) p.rss_kib = std::strtol(line.c_str() + 6, nullptr, 10);
  }
}

}  // namespace

int rankFromEnvironment(const Env& env, int* local_rank, int* world_size) {
  auto first = [&env](std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
      const int v = toInt(scanEnvValue(env, k));
      if (v >= 0) return v;
    }
    return -1;
  };
  if (local_rank) {
    *local_rank = first({"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                         "PMIX_LOCAL_RANK", "SLURM_LOCALID"});
  }
  if (world_size)
    *world_size = first({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"});
  return first({"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"});
}

std::string threadStateSummary(const HangProcess& p) {
  std::map<char, int> n;
  for (const auto& t : p.threads) ++n[t.state];
  std::string out;
  for (const auto& [state, count] : n)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", count, state);
  return out;
}

namespace {

using Ticks = std::map<std::pair<int, int>, unsigned long long>;

// A process with a rank (or named by --pid), read; false when it is not one of the job's.
bool readCandidate(const ProcScanOptions& opt, int pid, ProcScan& scan,
                   std::map<int, Candidate>& found) {
  const std::string dir = fmt::format("{}/{}", opt.proc_root, pid);
  const StatLine st = readStat(dir + "/stat");
  if (!st.ok) {
    if (!opt.pids.empty()) scan.problems.push_back(fmt::format("pid {}: no such process", pid));
    return false;
  }
  Candidate c;
  c.p.pid = pid;
  c.p.ppid = st.ppid;
  c.p.state = st.state;
  bool env_ok = false;
  const Env env = readEnviron(dir + "/environ", env_ok);
  c.env_ok = env_ok;
  if (!env_ok && !opt.pids.empty()) {
    scan.problems.push_back(fmt::format("pid {}: environment not readable ({}): rank unknown", pid,
                                        std::strerror(errno)));
  }
  c.p.rank = rankFromEnvironment(env, &c.p.local_rank, &c.p.world_size);
  c.has_rank_env =
      !scanEnvValue(env, "RANK").empty() || !scanEnvValue(env, "OMPI_COMM_WORLD_RANK").empty() ||
      !scanEnvValue(env, "PMI_RANK").empty() || !scanEnvValue(env, "PMIX_RANK").empty();
  if (opt.pids.empty() && c.p.rank < 0) return false;
  if (opt.pids.empty() && st.comm == "ccscope") return false;
  readMaps(dir + "/maps", c.p);
  // Slurm's task id alone is in every step's processes: a rank also maps NCCL or torch.
  if (opt.pids.empty() && !c.has_rank_env && c.p.nccl_library.empty() && !c.p.torch) return false;
  for (const auto& [k, v] : env)
    if (keptVariable(k)) c.p.env[k] = v;
  c.p.job = jobKey(env);
  c.p.cmdline = cmdlineOf(dir + "/cmdline");
  readStatus(dir + "/status", c.p);
  std::string wchan;
  if (readFile(dir + "/wchan", wchan)) c.p.wchan = trim(wchan) == "0" ? "" : trim(wchan);
  found.emplace(pid, std::move(c));
  return true;
}

// Helpers (a child with its parent's rank and job) hang under their rank; a launcher agent
// with the job's variables but no library mapped gives way to the rank that maps one.
std::vector<HangProcess> keepRanks(std::map<int, Candidate>& found, bool all) {
  // A child with its parent's rank and job is a helper of that rank (a data loader worker).
  for (auto& [pid, c] : found) {
    auto parent = found.find(c.p.ppid);
    if (parent != found.end() && parent->second.p.rank == c.p.rank &&
        parent->second.p.job == c.p.job && all) {
      parent->second.p.helpers.push_back(pid);
      c.p.pid = -pid;  // marked: not a rank of its own
    }
  }
  // A launcher agent with the job's variables but no library mapped is dropped when a process
  // of the same rank and job maps NCCL or torch.
  std::set<std::pair<std::string, int>> with_library;
  for (const auto& [pid, c] : found)
    if (c.p.pid > 0 && (c.p.torch || !c.p.nccl_library.empty()))
      with_library.insert({c.p.job, c.p.rank});
  std::vector<HangProcess> procs;
  for (auto& [pid, c] : found) {
    if (c.p.pid < 0) continue;
    if (all && !c.p.torch && c.p.nccl_library.empty() && with_library.count({c.p.job, c.p.rank})) {
      continue;
    }
    procs.push_back(std::move(c.p));
  }
  return procs;
}

void readThreads(const std::string& root, std::vector<HangProcess>& procs, ProcScan& scan,
                 Ticks& ticks0) {
  for (auto& p : procs) {
    const std::string tdir = fmt::format("{}/{}/task", root, p.pid);
    std::vector<int> tids = numericEntries(tdir);
    if (tids.size() > kMaxThreads) tids.resize(kMaxThreads);
    for (int tid : tids) {
      const std::string d = fmt::format("{}/{}", tdir, tid);
      const StatLine st = readStat(d + "/stat");
      if (!st.ok) continue;
      HangThread t;
      t.tid = tid;
      t.name = st.comm;
      t.state = st.state;
      std::string w;
      if (readFile(d + "/wchan", w)) t.wchan = trim(w) == "0" ? "" : trim(w);
      std::string stack;
      if (readFile(d + "/stack", stack) && !stack.empty()) {
        scan.kernel_stacks = true;
        std::istringstream lines(stack);
        std::string frame;
        while (std::getline(lines, frame) && t.kernel_stack.size() < kMaxStackFrames)
          t.kernel_stack.push_back(frame);
      }
      ticks0[{p.pid, tid}] = st.ticks;
      p.threads.push_back(std::move(t));
    }
    if (p.threads.empty())
      scan.problems.push_back(fmt::format("pid {}: threads not readable", p.pid));
  }
}

// CPU use per thread over `sample_s`; states read again at its end.
void sampleCpu(const std::string& root, double sample_s, std::vector<HangProcess>& procs,
               ProcScan& scan, Ticks& ticks0) {
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(sample_s));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  for (auto& p : procs) {
    double total = 0;
    bool any = false;
    for (auto& t : p.threads) {
      const StatLine st = readStat(fmt::format("{}/{}/task/{}/stat", root, p.pid, t.tid));
      if (!st.ok) continue;
      const auto before = ticks0[{p.pid, t.tid}];
      t.cpu_percent =
          st.ticks >= before ? 100.0 * static_cast<double>(st.ticks - before) / hz / secs : 0;
      t.state = st.state;  // the later reading: a thread seen running once may be waiting
      total += t.cpu_percent;
      any = true;
    }
    if (any) p.cpu_percent = total;
    const StatLine st = readStat(fmt::format("{}/{}/stat", root, p.pid));
    if (st.ok)
      p.state = st.state;
    else
      scan.problems.push_back(
          fmt::format("pid {} (rank {}) exited while it was read", p.pid, p.rank));
  }
}

}  // namespace

ProcScan scanProcesses(const ProcScanOptions& opt) {
  ProcScan scan;
  const int self = opt.self_pid ? opt.self_pid : static_cast<int>(getpid());
  const std::vector<int> pids = opt.pids.empty() ? numericEntries(opt.proc_root) : opt.pids;
  std::map<int, Candidate> found;
  for (int pid : pids)
    if (pid != self) readCandidate(opt, pid, scan, found);
  std::vector<HangProcess> procs = keepRanks(found, opt.pids.empty());
  if (!chooseJob(opt.job, !opt.pids.empty(), procs, scan.choices)) return scan;
  Ticks ticks0;
  readThreads(opt.proc_root, procs, scan, ticks0);
  if (opt.sample_s > 0 && !procs.empty())
    sampleCpu(opt.proc_root, opt.sample_s, procs, scan, ticks0);
  std::sort(procs.begin(), procs.end(), [](const HangProcess& a, const HangProcess& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.pid < b.pid;
  });
  std::set<std::string> jobs;
  for (const auto& p : procs) jobs.insert(p.job);
  scan.jobs.assign(jobs.begin(), jobs.end());
  scan.processes = std::move(procs);
  return scan;
}

}  // namespace ccscope::diagnostics
