#include "diagnostics/live/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>

#include "core/deadline.h"

namespace ccscope::diagnostics {
namespace {

ChildSpec sh(const std::string& script, double timeout_s = 10) {
  ChildSpec s;
  s.argv = {"/bin/sh", "-c", script};
  s.timeout_s = timeout_s;
  return s;
}

// Gone, or a zombie waiting for init to reap it: in either case not running any more.
bool gone(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_s, comm, state;
    if (stat >> pid_s >> comm >> state && state == "Z") return true;
    usleep(10000);
  }
  return false;
}

TEST(ChildProcessTest, CapturesStdoutAndStderrAndTheExitCode) {
  ChildRun r = runChild(sh("echo one; echo two >&2; printf 'no newline'; exit 3"));
  ASSERT_TRUE(r.started) << r.start_error;
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.lines, (std::vector<std::string>{"one", "two", "no newline"}));
  EXPECT_EQ(r.describe(), "exit 3");
}

TEST(ChildProcessTest, SetsAndRemovesEnvironmentVariables) {
  setenv("CCSCOPE_CHILD_TEST_DROP", "present", 1);
  ChildSpec s = sh("echo \"set=$CCSCOPE_CHILD_TEST_SET drop=${CCSCOPE_CHILD_TEST_DROP:-gone}\"");
  s.set_env = {{"CCSCOPE_CHILD_TEST_SET", "info"}};
  s.unset_env = {"CCSCOPE_CHILD_TEST_DROP"};
  ChildRun r = runChild(s);
  unsetenv("CCSCOPE_CHILD_TEST_DROP");
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.lines, std::vector<std::string>{"set=info drop=gone"});
}

TEST(ChildProcessTest, AHungChildIsKilledAtTheDeadlineWithWhatItStarted) {
  int64_t t0 = core::nowNs();
  ChildRun r = runChild(sh("sleep 60 & echo started $!; wait", 0.5));
  double took = (core::nowNs() - t0) / 1e9;
  ASSERT_TRUE(r.started);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_GE(took, 0.5);
  EXPECT_LT(took, 3.0);
  EXPECT_NE(r.describe().find("did not finish within"), std::string::npos) << r.describe();
  ASSERT_EQ(r.lines.size(), 1u);
  pid_t sleeper = std::stoi(r.lines[0].substr(r.lines[0].find(' ') + 1));
  EXPECT_TRUE(gone(sleeper)) << "the child's own child outlived the deadline: pid " << sleeper;
}

TEST(ChildProcessTest, AGrandchildHoldingThePipeDoesNotHoldUsUp) {
  int64_t t0 = core::nowNs();
  ChildRun r = runChild(sh("sleep 60 & echo left $!; exit 0", 20));
  EXPECT_LT((core::nowNs() - t0) / 1e9, 5.0);
  EXPECT_TRUE(r.ok()) << r.describe();
  ASSERT_EQ(r.lines.size(), 1u);
  pid_t sleeper = std::stoi(r.lines[0].substr(r.lines[0].find(' ') + 1));
  EXPECT_TRUE(gone(sleeper)) << "left behind: pid " << sleeper;
}

TEST(ChildProcessTest, ACrashIsReportedWithItsSignal) {
  ChildRun r = runChild(sh("kill -SEGV $$"));
  ASSERT_TRUE(r.started);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_NE(r.describe().find("signal 11"), std::string::npos) << r.describe();
}

TEST(ChildProcessTest, OutputBeyondTheCapIsDrainedNotKept) {
  ChildSpec s = sh("i=0; while [ $i -lt 3000 ]; do echo line $i; i=$((i+1)); done");
  s.max_lines = 100;
  ChildRun r = runChild(s);
  EXPECT_TRUE(r.ok()) << r.describe();  // the child never blocked on a full pipe
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.lines.size(), 100u);
  EXPECT_EQ(r.lines.front(), "line 0");
}

TEST(ChildProcessTest, AProgramThatCannotRunIsNotStarted) {
  ChildSpec s;
  s.argv = {"/nonexistent/ccscope-helper"};
  ChildRun r = runChild(s);
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.start_error.find("/nonexistent/ccscope-helper"), std::string::npos) << r.start_error;
}

}  // namespace
}  // namespace ccscope::diagnostics
