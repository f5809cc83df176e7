// NCCL's own debug output routed to a rank's file and read back by the analyzer. This needs no
// GPU: ncclGetUniqueId only opens NCCL's bootstrap socket, so a wrong NCCL_SOCKET_IFNAME fails it
// on any machine with NCCL, as it fails rank 0 of a real job.
#include "diagnostics/analyze/nccl_debug_log.h"

#include <gtest/gtest.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ccscope::diagnostics {
namespace {

namespace fs = std::filesystem;

struct ChildRun {
  std::string path;  // the log the child routed NCCL's output to
  int rc = -1;       // ncclGetUniqueId's result
  pid_t pid = -1;
};

// In a child (NCCL reads its environment once per process) as rank `rank`: route NCCL_DEBUG,
// pick the interface, and ask NCCL for a unique id.
ChildRun uniqueIdInChild(const fs::path& dir, const char* ifname, int rank = 3) {
  const fs::path path_file = dir / ("path" + std::to_string(rank));
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("CCSCOPE_DUMP_DIR", dir.c_str(), 1);
    unsetenv("NCCL_DEBUG_FILE");
    unsetenv("NCCL_DEBUG");
    setenv("NCCL_SOCKET_IFNAME", ifname, 1);
    std::ofstream(path_file) << routeNcclDebugOutput(rank).path;
    ncclUniqueId id;
    _exit(static_cast<int>(ncclGetUniqueId(&id)));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream in(path_file);
  ChildRun run;
  std::getline(in, run.path);
  run.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.pid = pid;
  return run;
}

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class NcclDebugLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ccscope-nccl-log-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(NcclDebugLogTest, AWrongSocketInterfaceIsAHostNetworkVerdictFromNcclsOwnLog) {
  auto [path, rc, pid] = uniqueIdInChild(dir_, "ccscope-no-such-if0");
  EXPECT_EQ(rc, static_cast<int>(ncclInvalidUsage));
  EXPECT_EQ(fs::path(path).parent_path(), dir_);
  EXPECT_NE(path.find("ccscope-nccl-r3-"), std::string::npos) << path;
  const std::string text = readAll(path);
  EXPECT_NE(text.find("NCCL WARN"), std::string::npos) << text;
  auto d = diagnoseNcclLog(path);
  ASSERT_TRUE(d.has_value()) << text;
  EXPECT_EQ(d->layer, core::Layer::kHostNetwork) << d->verdict;
  ASSERT_FALSE(d->evidence.empty());
  EXPECT_EQ(d->evidence.front().file, path);
}

TEST_F(NcclDebugLogTest, AHealthyBootstrapLeavesALogWithNothingConclusive) {
  auto [path, rc, pid] = uniqueIdInChild(dir_, "lo");
  ASSERT_EQ(rc, 0) << readAll(path);
  EXPECT_NE(readAll(path).find("NCCL INFO"), std::string::npos);
  EXPECT_FALSE(diagnoseNcclLog(path).has_value());
}

// The launcher of a failed job finds each rank's log from the rank's pid alone, and reads them
// together: the one rank whose NCCL failed is the verdict, with its log as the evidence.
TEST_F(NcclDebugLogTest, TheLauncherReadsEveryRanksLogTogether) {
  const ChildRun ok = uniqueIdInChild(dir_, "lo", 0);
  const ChildRun bad = uniqueIdInChild(dir_, "ccscope-no-such-if0", 1);
  ASSERT_EQ(ok.rc, 0);
  ASSERT_EQ(bad.rc, static_cast<int>(ncclInvalidUsage));
  const char* had = std::getenv("NCCL_DEBUG_FILE");
  const std::string operators = had ? had : "";
  setenv("CCSCOPE_DUMP_DIR", dir_.c_str(), 1);
  unsetenv("NCCL_DEBUG_FILE");
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const std::vector<std::string> logs{ncclDebugPath(0, ok.pid, host),
                                      ncclDebugPath(1, bad.pid, host)};
  unsetenv("CCSCOPE_DUMP_DIR");
  if (had) setenv("NCCL_DEBUG_FILE", operators.c_str(), 1);
  EXPECT_EQ(logs[0], ok.path);
  EXPECT_EQ(logs[1], bad.path);
  size_t read = 0;
  auto d = diagnoseNcclLogs(logs, 0, &read);
  EXPECT_EQ(read, 2u);
  ASSERT_TRUE(d.has_value()) << readAll(bad.path);
  EXPECT_EQ(d->layer, core::Layer::kHostNetwork) << d->verdict;
  EXPECT_EQ(d->culprit.ranks, std::vector<int>{1}) << d->verdict;  // from the file's name
  ASSERT_FALSE(d->evidence.empty());
  EXPECT_EQ(d->evidence.front().file, bad.path);
  // One log alone (or one file named twice) is the rank's own diagnosis, not the launcher's;
  // files older than the job are another job's.
  EXPECT_FALSE(diagnoseNcclLogs({bad.path, dir_ / "missing.log"}).has_value());
  EXPECT_FALSE(diagnoseNcclLogs({bad.path, bad.path}).has_value());
  EXPECT_FALSE(diagnoseNcclLogs(logs, std::time(nullptr) + 60).has_value());
}

TEST(NcclDebugFilePattern, AnUnwritableDirectoryLeavesNcclAsItWas) {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("CCSCOPE_DUMP_DIR", "/nonexistent/ccscope", 1);
    unsetenv("NCCL_DEBUG_FILE");
    unsetenv("NCCL_DEBUG");
    const NcclDebugRoute route = routeNcclDebugOutput(0);
    _exit(route.path.empty() && !std::getenv("NCCL_DEBUG_FILE") && !std::getenv("NCCL_DEBUG") ? 0
                                                                                              : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(NcclDebugFilePattern, ExpandsAsNcclDoes) {
  EXPECT_EQ(expandNcclDebugFile("/l/nccl.%h.%p", "node7.cluster.local", 412), "/l/nccl.node7.412");
  EXPECT_EQ(expandNcclDebugFile("100%%-%x%", "h", 1), "100%-%x%");
}

TEST(NcclDebugFilePattern, AnOperatorsSettingsAreKept) {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("NCCL_DEBUG", "WARN", 1);
    setenv("NCCL_DEBUG_FILE", "/var/log/nccl.%p", 1);
    const NcclDebugRoute route = routeNcclDebugOutput(0);
    const bool ok = route.path == "/var/log/nccl." + std::to_string(getpid()) && !route.ours &&
                    std::string(std::getenv("NCCL_DEBUG")) == "WARN" &&
                    std::string(std::getenv("NCCL_DEBUG_FILE")) == "/var/log/nccl.%p";
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace ccscope::diagnostics
