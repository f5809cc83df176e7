// Runs a helper program in a child process under a deadline and captures what it prints: the
// library probe initialises UCX/NCCL there, because an initialisation can crash, hang or leave
// threads behind, and its log (stderr) is the evidence. The child is killed at the deadline,
// with anything it started in its process group, and is always reaped: nothing outlives it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ccscope::diagnostics {

struct ChildRun {
  bool started = false;
  std::string start_error;         // why it did not start
  bool timed_out = false;          // killed (SIGKILL) at the deadline
  int exit_code = -1;              // when it exited by itself
  int signal = 0;                  // when a signal ended it (not ours)
  std::vector<std::string> lines;  // stdout and stderr, interleaved as written
  bool truncated = false;          // more output than kept (the rest was read and dropped)
  double seconds = 0;
  bool ok() const { return started && !timed_out && signal == 0 && exit_code == 0; }
  // "exit 1", "killed by signal 11 (Segmentation fault)", "did not finish within 5.0 s (killed)"
  std::string describe() const;
};

struct ChildSpec {
  std::vector<std::string> argv;                             // argv[0] is the path executed
  std::vector<std::pair<std::string, std::string>> set_env;  // added or replaced
  std::vector<std::string> unset_env;                        // removed
  double timeout_s = 5;
  size_t max_lines = 4000;
};

ChildRun runChild(const ChildSpec& spec);

}  // namespace ccscope::diagnostics
