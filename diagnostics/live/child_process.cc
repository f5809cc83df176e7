#include "diagnostics/live/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/deadline.h"

extern char** environ;

namespace ccscope::diagnostics {

namespace {

constexpr size_t kMaxLineBytes = 2048;
constexpr int kPollSliceMs = 50;

std::vector<std::string> childEnvironment(const ChildSpec& spec) {
  std::vector<std::string> env;
  auto replaced = [&](const std::string& kv) {
    std::string key = kv.substr(0, kv.find('='));
    return std::find(spec.unset_env.begin(), spec.unset_env.end(), key) != spec.unset_env.end() ||
           std::any_of(spec.set_env.begin(), spec.set_env.end(),
                       [&](auto& p) { return p.first == key; });
  };
  for (char** e = environ; e && *e; ++e)
    if (!replaced(*e)) env.emplace_back(*e);
  for (const auto& [k, v] : spec.set_env) env.push_back(fmt::format("{}={}", k, v));
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& v) {
  std::vector<char*> p;
  p.reserve(v.size() + 1);
  for (auto& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// In the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void execChild(int out_fd, char* const* argv, char* const* envp) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // the rank died: so does its helper
  setpgid(0, 0);                     // its own group, so a kill reaches what it started
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, 0);
  dup2(out_fd, 1);
  dup2(out_fd, 2);
#ifdef SYS_close_range
  syscall(SYS_close_range, 3, ~0U, 0);  // the rank's sockets are not the helper's business
#endif
  execve(argv[0], argv, envp);
  const char msg[] = "exec failed\n";
  ssize_t ignored = write(2, msg, sizeof msg - 1);
  (void)ignored;
  _exit(127);
}

struct LineSink {
  ChildRun& run;
  size_t max_lines;
  std::string partial;
  void add(std::string line) {
    if (run.lines.size() >= max_lines) {
      run.truncated = true;
      return;
    }
    if (line.size() > kMaxLineBytes) line.resize(kMaxLineBytes);
    run.lines.push_back(std::move(line));
  }
  void feed(const char* data, size_t n) {
    partial.append(data, n);
    size_t start = 0, nl;
    while ((nl = partial.find('\n', start)) != std::string::npos) {
      add(partial.substr(start, nl - start));
      start = nl + 1;
    }
    partial.erase(0, start);
    if (partial.size() > kMaxLineBytes) add(std::exchange(partial, {}));
  }
  void flush() {
    if (!partial.empty()) add(std::exchange(partial, {}));
  }
};

// Reads until the child exited and its output is drained, or the deadline passes. The child is
// not reaped here (WNOWAIT): while it is a zombie its pid, and so its process group id, cannot
// be reused, which makes the group kill that follows safe.
void readUntilExit(pid_t pid, int fd, core::Deadline deadline, ChildRun& run, LineSink& sink) {
  char buf[8192];
  bool exited = false, eof = false;
  while (!(exited && eof)) {
    if (deadline.expired()) {
      run.timed_out = !exited;
      return;
    }
    pollfd p{fd, POLLIN, 0};
    int ready = eof ? 0 : poll(&p, 1, deadline.remainingMsClamped(kPollSliceMs));
    if (ready > 0) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0)
        sink.feed(buf, static_cast<size_t>(n));
      else if (n == 0 || errno != EINTR)
        eof = true;
    }
    siginfo_t info{};
    if (!exited && waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid) {
      exited = true;
      if (info.si_code == CLD_EXITED)
        run.exit_code = info.si_status;
      else
        run.signal = info.si_status;
    }
    // Something the child left behind may hold the pipe open: once the child is gone, read
    // what is there and stop.
    if (exited && ready == 0) eof = true;
    if (eof && !exited) usleep(1000);
  }
}

}  // namespace

std::string ChildRun::describe() const {
  if (!started) return "did not start: " + start_error;
  if (timed_out) return fmt::format("did not finish within {:.1f} s (killed)", seconds);
  if (signal) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  return fmt::format("exit {}", exit_code);
}

ChildRun runChild(const ChildSpec& spec) {
  ChildRun run;
  if (spec.argv.empty()) {
    run.start_error = "no command";
    return run;
  }
  std::vector<std::string> args = spec.argv, env = childEnvironment(spec);
  std::vector<char*> argv = pointers(args), envp = pointers(env);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    run.start_error = fmt::format("pipe: {}", std::strerror(errno));
    return run;
  }
  const int64_t t0 = core::nowNs();
  pid_t pid = fork();
  if (pid == 0) execChild(fds[1], argv.data(), envp.data());
  close(fds[1]);
  if (pid < 0) {
    run.start_error = fmt::format("fork: {}", std::strerror(errno));
    close(fds[0]);
    return run;
  }
  setpgid(pid, pid);  // also from here: no race with a kill before the child ran setpgid
  run.started = true;
  LineSink sink{run, spec.max_lines, {}};
  readUntilExit(pid, fds[0], core::Deadline::afterSeconds(spec.timeout_s), run, sink);
  sink.flush();
  close(fds[0]);
  kill(-pid, SIGKILL);  // the timed-out child, or whatever an exited one left in its group
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.seconds = (core::nowNs() - t0) / 1e9;
  if (run.exit_code == 127 && !run.lines.empty() && run.lines.back() == "exec failed") {
    run.started = false;
    run.start_error = fmt::format("cannot execute {}", spec.argv[0]);
  }
  return run;
}

}  // namespace ccscope::diagnostics
