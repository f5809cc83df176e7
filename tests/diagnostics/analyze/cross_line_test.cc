// Causes that no single line states: processes that each started alone under a launcher that
// started several, the one rank that every collective-mismatch report names, the rank a
// launcher's failure block names on a line of its own, and a host without the network plugin the
// others load.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "diagnostics/analyze/device_tracker.h"
#include "diagnostics/analyze/world_tracker.h"
#include "test_util.h"

namespace ccscope::diagnostics {
namespace {

using testing::analyzeMemory;
using testing::hasFinding;

TEST(CrossLineTest, ProcessesThatEachStartedAloneUnderALauncherOfSeveralAreTwoMpis) {
  const auto d = analyzeMemory(
      {{"out.txt",
        {"$ mpirun -np 4 -host a,b ./hello", "Hello from a: rank 0 of 1",
         "Hello from a: rank 0 of 1", "Hello from b: rank 0 of 1", "Hello from b: rank 0 of 1"}}});
  EXPECT_EQ(d.layer, core::Layer::kLibrary) << d.verdict;
  EXPECT_TRUE(hasFinding(d, "library.mpi-singleton-worlds")) << d.verdict;
  EXPECT_NE(d.verdict.find("asked for 4 processes"), std::string::npos) << d.verdict;
}

TEST(CrossLineTest, OneSingletonUnderALauncherOfSeveralIsEnough) {
  const auto d = analyzeMemory(
      {{"out.txt", {"srun -N 2 -n 8 ./app", "process 0 out of 1 processes started"}}});
  EXPECT_TRUE(hasFinding(d, "library.mpi-singleton-worlds")) << d.verdict;
}

TEST(CrossLineTest, SingletonsOfOneProcessRunsOrOfLargerWorldsAreHealthy) {
  // A one-process run after a run of two; worlds of 16 and of 1.5; a GPU count, not a rank; one
  // process that says it twice, with no launcher line.
  for (const auto& lines : std::vector<std::vector<std::string>>{
           {"mpirun -np 2 ./hello", "rank 0 of 2", "mpirun -np 1 ./hello", "rank 0 of 1"},
           {"mpirun -np 16 ./hello", "rank 0 of 16", "rank 0 of 16"},
           {"mpirun -np 2 ./hello", "task 0 of 1.5 done", "using GPU 0 of 1"},
           {"rank 0 of 1: starting", "rank 0 of 1: exiting"}}) {
    const auto d = analyzeMemory({{"out.txt", lines}});
    EXPECT_FALSE(hasFinding(d, "library.mpi-singleton-worlds")) << lines.front();
  }
  // The launch in one file, singletons in another: nothing ties them.
  const auto d = analyzeMemory(
      {{"launch.txt", {"mpirun -np 4 ./hello"}}, {"rank.txt", {"rank 0 of 1", "rank 0 of 1"}}});
  EXPECT_FALSE(hasFinding(d, "library.mpi-singleton-worlds")) << d.verdict;
}

TEST(CrossLineTest, ALauncherLineSaysHowManyProcessesItStarts) {
  EXPECT_EQ(launchedProcesses("$ mpirun -np 4 ./app -n 1"), 4);
  EXPECT_EQ(launchedProcesses("srun -N 2 -n8 ./app"), 8);
  EXPECT_EQ(launchedProcesses("srun --ntasks=6 python train.py"), 6);
  EXPECT_EQ(launchedProcesses("/opt/ompi/bin/mpirun -nolocal -np 3 ./a"), 3);
  EXPECT_EQ(launchedProcesses("mpiexec.hydra -n 2 ./a"), 2);
  EXPECT_EQ(launchedProcesses("[mpiexec@node01] Launch arguments: -n 2"), 0);
  EXPECT_EQ(launchedProcesses("the mpirun_rsh -np 2 wrapper"), 0);
  // A line of 64 KiB is scanned, not matched by a recursive regex.
  EXPECT_EQ(launchedProcesses("mpirun " + std::string(65536, 'x')), 0);
  EXPECT_EQ(launchedProcesses("srun " + std::string(65536, ' ') + "-n 5"), 5);
}

std::string mismatchLine(int self, const char* mine, int other, const char* theirs) {
  return fmt::format(
      "RuntimeError: Detected mismatch between collectives on ranks. Rank {} is running "
      "collective: CollectiveFingerPrint(SequenceNumber=42, OpType={}, TensorShape=[25]), but "
      "Rank {} is running collective: CollectiveFingerPrint(SequenceNumber=42, OpType={}, "
      "TensorShape=[1]).",
      self, mine, other, theirs);
}

TEST(CrossLineTest, TheRankEveryMismatchReportNamesIsTheCulprit) {
  testing::Files files;
  for (int r = 0; r < 8; ++r) {
    const std::string line = r == 5 ? mismatchLine(5, "BROADCAST", 0, "ALLREDUCE")
                                    : mismatchLine(r, "ALLREDUCE", 5, "BROADCAST");
    files.push_back({fmt::format("rank_{}.log", r), {line}});
  }
  const auto d = analyzeMemory(files);
  EXPECT_EQ(d.layer, core::Layer::kApplication) << d.verdict;
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{5}) << d.verdict;
}

TEST(CrossLineTest, OneMismatchReportNamesBothOfItsRanks) {
  const auto d = analyzeMemory({{"rank_1.log", {mismatchLine(1, "ALLREDUCE", 0, "BROADCAST")}}});
  EXPECT_EQ(d.culprit.ranks, (std::vector<int>{0, 1})) << d.verdict;
}

TEST(CrossLineTest, TheOtherRankIsFoundPastALongFingerprint) {
  // Fingerprints of many tensors run past the window the rules' expressions see.
  const std::string shapes = "TensorShape=[" + std::string(6000, '1') + "]";
  testing::Files files;
  for (int r = 0; r < 4; ++r) {
    const std::string line = r == 2 ? mismatchLine(2, shapes.c_str(), 0, "ALLREDUCE")
                                    : mismatchLine(r, "ALLREDUCE", 2, shapes.c_str());
    files.push_back({fmt::format("rank_{}.log", r), {line}});
  }
  EXPECT_EQ(analyzeMemory(files).culprit.ranks, std::vector<int>{2});
}

TEST(CrossLineTest, ALaunchersFailureBlockNamesTheRankThatFailedFirst) {
  const auto d = analyzeMemory(
      {{"mpirun.out",
        {"Primary job  terminated normally, but 1 process returned",
         "a non-zero exit code. Per user-direction, the job has been aborted.",
         "mpirun detected that one or more processes exited with non-zero status, thus causing",
         "the job to be terminated. The first process to do so was:", "",
         "  Process name: [[11192,1],6]", "  Exit code:    3"}}});
  EXPECT_EQ(d.layer, core::Layer::kApplication) << d.verdict;
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{6}) << d.verdict;
}

TEST(CrossLineTest, AHostWithoutTheNetworkPluginTheOthersLoadIsNamed) {
  const auto d = analyzeMemory(
      {{"node04.log",
        {"node04:589474:589541 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/"
         "libnccl-net.so",
         "node04:589474:589541 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin (v7)"}},
       {"node11.log",
        {"node11:18226:18274 [5] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using "
         "internal network plugin."}}});
  EXPECT_EQ(d.layer, core::Layer::kLibrary) << d.verdict;
  EXPECT_TRUE(hasFinding(d, "library.nccl-net-plugin-differs")) << d.verdict;
  EXPECT_EQ(d.culprit.hosts, std::vector<std::string>{"node11"}) << d.verdict;
}

TEST(CrossLineTest, HostsThatAgreeOnTheirNetworkPluginAreNotBlamed) {
  const std::string fallback =
      " [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.";
  // Both internal; one loading its plugin after a name it tried first, the other loading it
  // without saying so beyond the env setting; one host whose two processes differ.
  for (const auto& lines : std::vector<std::vector<std::string>>{
           {"node01:1:1" + fallback, "node02:2:2" + fallback},
           {"node01:1:1 [0] NCCL INFO NET/Plugin: No plugin found (libnccl-net-ofi.so)",
            "node01:1:1 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v8)",
            "node02:2:2 [0] NCCL INFO NET/Plugin: Plugin name set by env to libnccl-net-ofi.so"},
           {"node01:1:1" + fallback,
            "node01:3:3 [1] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin (v7)"}}) {
    const auto d = analyzeMemory({{"a.log", lines}});
    EXPECT_FALSE(hasFinding(d, "library.nccl-net-plugin-differs")) << lines.front();
  }
}

}  // namespace
}  // namespace ccscope::diagnostics

namespace ccscope::diagnostics {
namespace {

using testing::analyzeMemory;

std::string initLine(const std::string& host, int pid, int rank, const std::string& bus,
                     const std::string& comm_id) {
  return fmt::format(
      "{}:{}:{} [0] NCCL INFO ncclCommInitRank comm 0x55aa{} rank {} nranks 2 "
      "cudaDev 0 nvmlDev 0 busId {}{} - Init START",
      host, pid, pid + 7, rank, rank, bus, comm_id.empty() ? "" : " commId " + comm_id);
}

TEST(DeviceTrackerTest, TwoProcessesOfOneCommunicatorOnOneGpuAreTheApplicationsDeviceChoice) {
  const auto d = analyzeMemory(
      {{"out.txt",
        {initLine("w0", 42, 0, "100000", "0xaa9b"), initLine("w0", 43, 1, "100000", "0xaa9b")}}});
  EXPECT_EQ(d.layer, core::Layer::kApplication) << d.verdict;
  EXPECT_NE(d.verdict.find("busId 100000"), std::string::npos) << d.verdict;
  EXPECT_EQ(d.culprit.hosts, std::vector<std::string>{"w0"}) << d.verdict;
}

TEST(DeviceTrackerTest, ACommunicatorThatCompletedItsInitPassedNcclsOwnCheck) {
  // Two processes with their own NCCL_HOSTID share a GPU: NCCL completes the init.
  std::string done = initLine("w0", 43, 1, "100000", "0xaa9b");
  done.replace(done.find("START"), 5, "COMPLETE");
  const auto d = analyzeMemory({{"out.txt",
                                 {initLine("w0", 42, 0, "100000", "0xaa9b"),
                                  initLine("w0", 43, 1, "100000", "0xaa9b"), done}}});
  EXPECT_NE(d.layer, core::Layer::kApplication) << d.verdict;
}

TEST(DeviceTrackerTest, OneProcessInSeveralCommunicatorsOrRanksOnTheirOwnGpusAreHealthy) {
  const std::vector<std::vector<std::string>> healthy = {
      // one process, rank 0 of one communicator and rank 1 of another, both on its GPU
      {initLine("w0", 42, 0, "1b000", ""), initLine("w0", 42, 1, "1b000", "")},
      // two processes on their own GPUs
      {initLine("w0", 42, 0, "1b000", "0x1"), initLine("w0", 43, 1, "1c000", "0x1")},
      // one bus id on two hosts
      {initLine("w0", 42, 0, "1b000", "0x1"), initLine("w1", 42, 1, "1b000", "0x1")},
      // one GPU in two communicators of two processes (two jobs' logs side by side)
      {initLine("w0", 42, 0, "1b000", "0x1"), initLine("w0", 43, 1, "1b000", "0x2")},
      // the same rank twice (init, then teardown of one process restarted)
      {initLine("w0", 42, 0, "1b000", "0x1"), initLine("w0", 50, 0, "1b000", "0x1")}};
  for (const auto& lines : healthy) {
    const auto d = analyzeMemory({{"out.txt", lines}});
    EXPECT_NE(d.layer, core::Layer::kApplication) << lines.back() << ": " << d.verdict;
  }
}

TEST(DeviceTrackerTest, ReadsTheFieldsOfAnInitLine) {
  const auto l = parseNcclInitLine(initLine("gpu-7.cluster", 4242, 3, "e1000", "0x1f"));
  EXPECT_EQ(l.host, "gpu-7.cluster");
  EXPECT_EQ(l.pid, "4242");
  EXPECT_EQ(l.rank, 3);
  EXPECT_EQ(l.bus_id, "e1000");
  EXPECT_EQ(l.comm, "0x1f");
  EXPECT_TRUE(parseNcclInitLine("NCCL INFO rank 3 nranks 4 busId e1000").host.empty());
  EXPECT_TRUE(parseNcclInitLine("h:1:2 [0] NCCL INFO Channel 00 : rank 3 nranks 4").host.empty());
}

// An errno text is its caller's detail: the caller's rule decides where one matches the line.
TEST(ErrnoTextTest, TheCallersRuleDecidesAndTheErrnoAloneIsNoHighConfidence) {
  auto d = analyzeMemory(
      {{"out.txt",
        {"torch.distributed.DistNetworkError: The client socket has failed to connect to any "
         "network address of (10.0.0.9, 29500). The client socket has failed to connect to "
         "10.0.0.9:29500 (errno: 113 - No route to host)."}}});
  EXPECT_EQ(d.layer, core::Layer::kBootstrap) << d.verdict;
  d = analyzeMemory({{"out.txt", {"connect() to 10.0.0.9 failed: No route to host"}}});
  EXPECT_EQ(d.layer, core::Layer::kHostNetwork) << d.verdict;
  EXPECT_EQ(d.confidence, "medium") << d.verdict;
  d = analyzeMemory({{"out.txt",
                      {"h1:7:8 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
                       "10.2.0.7<43215> failed : No route to host"}}});
  EXPECT_EQ(d.layer, core::Layer::kHostNetwork) << d.verdict;
  EXPECT_EQ(d.confidence, "high") << d.verdict;
}

}  // namespace
}  // namespace ccscope::diagnostics

namespace ccscope::diagnostics {
namespace {

using testing::analyzeMemory;

std::vector<std::string> claims(const std::vector<int>& ranks, int world) {
  std::vector<std::string> out;
  out.reserve(ranks.size());
  for (int r : ranks)
    out.push_back(fmt::format("initializing ddp: GLOBAL_RANK: {}, MEMBER: {}/{}", r, r + 1, world));
  return out;
}

TEST(RankClaimTest, ARankClaimedTwiceWhileOthersNeverAppearIsTheLaunchers) {
  const auto d = analyzeMemory({{"out.txt", claims({1, 1, 2, 2, 0, 0}, 8)}});
  EXPECT_EQ(d.layer, core::Layer::kBootstrap) << d.verdict;
  EXPECT_NE(d.verdict.find("rank 1 was claimed by 2 processes while 5 of the 8"), std::string::npos)
      << d.verdict;
}

TEST(RankClaimTest, EveryRankTwiceOrAWorldThatFormedIsNoClaim) {
  // A second round of every rank (fit, then test; or a restart).
  auto d = analyzeMemory({{"out.txt", claims({0, 1, 0, 1}, 2)}});
  EXPECT_EQ(d.verdict.find("claimed by"), std::string::npos) << d.verdict;
  // One node's console of a larger job, after the world formed.
  auto lines = claims({0, 1, 0, 1}, 8);
  lines.insert(lines.begin() + 2,
               "All distributed processes registered. Starting with 8 processes");
  d = analyzeMemory({{"out.txt", lines}});
  EXPECT_EQ(d.verdict.find("claimed by"), std::string::npos) << d.verdict;
  // Each rank once.
  d = analyzeMemory({{"out.txt", claims({0, 1, 2}, 8)}});
  EXPECT_EQ(d.verdict.find("claimed by"), std::string::npos) << d.verdict;
}

}  // namespace
}  // namespace ccscope::diagnostics
