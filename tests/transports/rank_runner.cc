#include "tests/transports/rank_runner.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "launch/store_server.h"

namespace ccscope::transports::conformance {

namespace {

constexpr double kReapGraceSeconds = 5;  // ranks enforce their own deadline; this catches hangs

struct Child {
  int rank = 0;
  pid_t pid = -1;
  int status = 0;
  bool reaped = false;
  bool timed_out = false;
  std::string log_path;
};

[[noreturn]] void childExit(int rank, int code, const std::string& why) {
  if (!why.empty()) rankFailure(rank, __FILE__, __LINE__, why);
  std::fflush(stderr);
  _exit(code);
}

[[noreturn]] void runChild(int rank, int port, const std::string& token, const RankRunOptions& o,
                           const RankBody& body) {
  core::Deadline deadline = core::Deadline::afterSeconds(o.timeout_s);
  auto store =
      launch::StoreClient::join(launch::HostPort{"127.0.0.1", port}, token, rank, o.np, deadline);
  if (!store) childExit(rank, 2, "join: " + store.status().toString());
  auto made = o.make ? o.make(o.options) : makeTransport(o.transport, o.options);
  if (!made) childExit(rank, 2, "makeTransport: " + made.status().toString());
  Transport& t = **made;
  core::Status st = t.connect(**store, deadline);
  if (!st) childExit(rank, 2, "connect: " + st.toString());
  RankContext ctx{rank, o.np, t, **store, deadline};
  int code = body(ctx);
  // A failed rank still joins, so its healthy peers need not sit out the whole deadline.
  if (o.final_barrier) {
    st = (*store)->barrier("conformance-end", deadline);
    if (!st && code == 0) childExit(rank, 3, "final barrier: " + st.toString());
  }
  t.close();
  (*store)->finish();
  childExit(rank, code, "");
}

void reapAll(std::vector<Child>& kids, core::Deadline deadline) {
  size_t left = kids.size();
  while (left > 0) {
    for (Child& c : kids) {
      if (!c.reaped && waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.reaped = true;
        --left;
      }
    }
    if (left > 0 && deadline.expired()) {
      for (Child& c : kids) {
        if (c.reaped) continue;
        c.timed_out = true;
        kill(c.pid, SIGKILL);
        waitpid(c.pid, &c.status, 0);
        c.reaped = true;
      }
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string readLog(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "" when the rank ended as the options expect.
std::string verdict(const Child& c, const RankRunOptions& o) {
  std::string ended = WIFSIGNALED(c.status)
                          ? fmt::format("was killed by signal {} ({})", WTERMSIG(c.status),
                                        strsignal(WTERMSIG(c.status)))
                          : fmt::format("exited with code {}", WEXITSTATUS(c.status));
  bool sigkilled = WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGKILL;
  std::string what;
  if (c.timed_out)
    what = fmt::format("was still running after {:.0f} s and was killed (a hang)",
                       o.timeout_s + kReapGraceSeconds);
  else if (c.rank == o.killed_rank && !sigkilled)
    what = "was expected to die by SIGKILL but " + ended;
  else if (c.rank != o.killed_rank && !(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0))
    what = ended;
  if (what.empty()) return "";
  return fmt::format("rank {} {}; its stderr:\n{}\n", c.rank, what, readLog(c.log_path));
}

}  // namespace

RankRunOptions localRanks(const std::string& transport, int np, double timeout_s) {
  RankRunOptions o;
  o.np = np;
  o.transport = transport;
  o.options.local_ranks = np;
  o.timeout_s = timeout_s;
  return o;
}

std::string runRanks(const RankRunOptions& o, const RankBody& body) {
  static std::atomic<int> runs{0};
  // Unique in its first 16 characters: shm names its segments after them, and ctest -j runs
  // test processes side by side.
  std::string token = fmt::format("{}-{}-conformance", getpid(), runs.fetch_add(1));
  auto server = launch::StoreServer::start("127.0.0.1", 0, token, o.np);
  if (!server) return "cannot start the store: " + server.status().toString();
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<Child> kids(o.np);
  for (int r = 0; r < o.np; ++r) {
    char path[] = "/tmp/ccscope-rank-XXXXXX";
    int fd = mkstemp(path);
    kids[r].rank = r;
    kids[r].log_path = path;
    pid_t pid = fork();
    if (pid == 0) {
      dup2(fd, STDERR_FILENO);
      ::close(fd);
      runChild(r, (*server)->port(), token, o, body);
    }
    ::close(fd);
    kids[r].pid = pid;
    if (pid < 0) kids.resize(r);  // reap the ones that exist, then report
    if (pid < 0) break;
  }
  reapAll(kids, core::Deadline::afterSeconds(o.timeout_s + kReapGraceSeconds));
  std::string report = static_cast<int>(kids.size()) < o.np ? "fork failed\n" : "";
  for (const Child& c : kids) {
    report += verdict(c, o);
    unlink(c.log_path.c_str());
  }
  return report;
}

namespace {
uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t word(uint64_t seed, size_t i) { return mix(seed * 0x100000001b3ull ^ (i / 8)); }
}  // namespace

void fillPattern(char* buf, size_t len, uint64_t seed) {
  for (size_t i = 0; i < len; i += 8) {
    uint64_t v = word(seed, i);
    std::memcpy(buf + i, &v, std::min<size_t>(8, len - i));
  }
}

int64_t firstMismatch(const char* buf, size_t len, uint64_t seed) {
  for (size_t i = 0; i < len; i += 8) {
    uint64_t v = word(seed, i);
    size_t n = std::min<size_t>(8, len - i);
    if (std::memcmp(buf + i, &v, n) == 0) continue;
    for (size_t j = 0; j < n; ++j)
      if (buf[i + j] != reinterpret_cast<const char*>(&v)[j]) return static_cast<int64_t>(i + j);
  }
  return -1;
}

void rankFailure(int rank, const char* file, int line, const std::string& message) {
  std::fprintf(stderr, "rank %d: %s:%d: %s\n", rank, file, line, message.c_str());
}

}  // namespace ccscope::transports::conformance
