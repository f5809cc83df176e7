#include "launch/local_launcher.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "launch/environment.h"
#include "launch/store_server.h"

namespace ccscope::launch {

using core::Code;
using core::Status;

namespace {

constexpr double kGraceSeconds = 10;
volatile sig_atomic_t g_forward_signal = 0;

void onSignal(int sig) { g_forward_signal = sig; }

struct Child {
  pid_t pid = -1;
  int rank = 0;
  bool done = false;
  int exit_code = 0;
  int signal = 0;
  bool killed_by_launcher = false;
};

// Exit codes by severity: a hang outranks wrong results, which outrank configuration errors.
int severity(int code) {
  switch (code) {
    case 3:
      return 6;
    case 4:
      return 5;
    case 5:
      return 4;
    case 2:
      return 3;
    case 0:
      return 0;
    default:
      return 2;
  }
}

pid_t spawnRank(const std::vector<std::string>& argv, int rank, int np, const std::string& store,
                const std::string& token) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  setenv("CCSCOPE_RANK", std::to_string(rank).c_str(), 1);
  setenv("CCSCOPE_LOCAL_RANK", std::to_string(rank).c_str(), 1);
  setenv("CCSCOPE_WORLD_SIZE", std::to_string(np).c_str(), 1);
  setenv("CCSCOPE_STORE", store.c_str(), 1);
  setenv("CCSCOPE_JOB_TOKEN", token.c_str(), 1);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Exec the resolved path, not /proc/self/exe, so ps and pgrep show "ccscope", not "exe".
  char self[4096] = {0};
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  execv(n > 0 ? self : "/proc/self/exe", args.data());
  std::fprintf(stderr, "ccscope: cannot start rank %d: %s\n", rank, std::strerror(errno));
  _exit(5);
}

bool onlyFrozenLeft(const StoreServer& server, const std::vector<Child>& kids) {
  auto table = server.health();
  for (const auto& k : kids)
    if (!k.done && table[k.rank].state != RankState::kFrozen) return false;
  return true;
}

// Waits for every rank; once one failed, the rest get the operation deadline plus a grace
// period, and ranks the store sees frozen (e.g. SIGSTOP) are killed at once: they never finish.
class RankReaper {
 public:
  RankReaper(StoreServer& server, std::vector<Child>& kids, double op_timeout_s)
      : server_(server), kids_(kids), op_timeout_s_(op_timeout_s) {}

  void waitAll() {
    int remaining = static_cast<int>(kids_.size());
    while (remaining > 0) {
      forwardSignal();
      int st = 0;
      pid_t pid = waitpid(-1, &st, WNOHANG);
      if (pid <= 0) {
        killStragglersWhenDue();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      for (Child& k : kids_)
        if (k.pid == pid) {
          reap(k, st);
          --remaining;
        }
    }
  }

 private:
  void forwardSignal() {
    if (!g_forward_signal) return;
    for (const Child& k : kids_)
      if (!k.done) kill(k.pid, g_forward_signal);
    g_forward_signal = 0;
  }

  void killStragglersWhenDue() {
    if (kill_at_ns_ && onlyFrozenLeft(server_, kids_)) kill_at_ns_ = core::nowNs();
    if (!kill_at_ns_ || core::nowNs() < kill_at_ns_) return;
    for (Child& k : kids_)
      if (!k.done) {
        spdlog::error(
            "rank {} (pid {}) is frozen or still running after another rank failed: "
            "killed so that no rank outlives the job",
            k.rank, k.pid);
        kill(k.pid, SIGKILL);
        k.killed_by_launcher = true;
      }
    kill_at_ns_ = 0;
  }

  void reap(Child& k, int st) {
    k.done = true;
    if (WIFSIGNALED(st)) {
      k.signal = WTERMSIG(st);
      std::fprintf(stderr, "ccscope: rank %d (pid %d) was killed by signal %d (%s)\n", k.rank,
                   k.pid, k.signal, strsignal(k.signal));
      if (!k.killed_by_launcher) server_.noteEndSignal(k.rank, k.signal);
    } else {
      k.exit_code = WEXITSTATUS(st);
    }
    if ((k.signal || k.exit_code) && !kill_at_ns_)
      kill_at_ns_ = core::Deadline::afterSeconds(op_timeout_s_ + kGraceSeconds).atNs();
  }

  StoreServer& server_;
  std::vector<Child>& kids_;
  const double op_timeout_s_;
  int64_t kill_at_ns_ = 0;
};

}  // namespace

core::Result<int> runLocalRanks(const LocalLaunchOptions& opts,
                                const std::vector<std::string>& argv) {
  if (opts.np < 1)
    return Status(Code::kInvalidArgument, fmt::format("--np must be at least 1 (got {})", opts.np));
  const char* env_token = std::getenv("CCSCOPE_JOB_TOKEN");
  std::string token = env_token && *env_token ? env_token : generateJobToken();
  CCSCOPE_ASSIGN_OR_RETURN(auto server,
                           StoreServer::start(opts.bind_host, opts.port, token, opts.np));
  std::string store = fmt::format("{}:{}", opts.bind_host, server->port());

  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  std::vector<Child> kids(opts.np);
  for (int r = 0; r < opts.np; ++r) {
    kids[r].rank = r;
    kids[r].pid = spawnRank(argv, r, opts.np, store, token);
    if (opts.rank_pids) opts.rank_pids->push_back(kids[r].pid);
  }
  RankReaper(*server, kids, opts.op_timeout_s).waitAll();
  int worst = 0;
  for (const auto& k : kids) {
    int code = k.signal ? 3 : k.exit_code;
    if (severity(code) > severity(worst)) worst = code;
  }
  return worst;
}

}  // namespace ccscope::launch
