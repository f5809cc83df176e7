// Synthetic multi-rank failures built in memory: each names the layer and the culprit that the
// cross-rank reasoning must find among many ranks' symptoms.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace ccscope::diagnostics {
namespace {

using testing::analyzeMemory;
using testing::Files;
using testing::hasHost;

constexpr int kRanks = 64;
constexpr int kRanksPerHost = 8;

std::string hostOf(int rank) { return fmt::format("node{:02d}", rank / kRanksPerHost); }

std::string ncclLine(int rank, const std::string& text) {
  return fmt::format("{}:{}:{} [{}] {}", hostOf(rank), 1000 + rank, 2000 + rank,
                     rank % kRanksPerHost, text);
}

std::string watchdogLine(int rank, long seq, const char* time) {
  return fmt::format(
      "[{}] [rank{}]:[E ProcessGroupNCCL.cpp:616] [Rank {}] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum={}, OpType=ALLREDUCE, "
      "NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600089 "
      "milliseconds before timing out.",
      time, rank, rank, seq);
}

std::vector<std::string> initLines(int rank) {
  return {ncclLine(rank, "NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>"),
          ncclLine(rank, "NCCL INFO NCCL version 2.21.5+cuda12.4"),
          ncclLine(rank, "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>"),
          ncclLine(rank, "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"),
          ncclLine(rank, "NCCL INFO comm 0x5555 rank 0 nranks 64 - Init COMPLETE")};
}

// 64 ranks: node03's ranks see retry-exceeded toward one peer; everybody times out later.
TEST(ScenarioTest, RetryExceededOnOneHostIsRdmaOnThatHostAndLink) {
  Files files;
  for (int r = 0; r < kRanks; ++r) {
    auto lines = initLines(r);
    if (r / kRanksPerHost == 3) {
      lines.push_back("[2024-05-01 10:00:05] " +
                      ncclLine(r,
                               "transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion "
                               "from peer 10.0.5.17<42001> with status=12 opcode=0 len=0 "
                               "vendor err 129 (Recv)"));
      lines.push_back(ncclLine(r, "NCCL INFO transport/net.cc:1298 -> 6"));
    }
    lines.push_back(watchdogLine(r, 1234, "2024-05-01 10:10:05"));
    lines.push_back("To avoid data inconsistency, we are taking the entire process down.");
    files.push_back({fmt::format("logs/rank_{}.log", r), lines});
  }
  const auto d = analyzeMemory(files);
  ASSERT_TRUE(d.conclusive) << d.verdict;
  EXPECT_EQ(d.layer, core::Layer::kRdma) << d.verdict;
  EXPECT_EQ(d.culprit.hosts, std::vector<std::string>{"node03"});
  ASSERT_FALSE(d.culprit.links.empty());
  EXPECT_EQ(d.culprit.links.front(), "node03 -> 10.0.5.17");
  EXPECT_EQ(d.culprit.ranks.size(), static_cast<size_t>(kRanksPerHost));
  ASSERT_FALSE(d.evidence.empty());
  EXPECT_NE(d.evidence.front().text.find("status=12"), std::string::npos);
  EXPECT_GT(d.findings.size(), 2u);
}

// Ranks on many hosts all name the same peer: the peer is the culprit.
TEST(ScenarioTest, PeerNamedByManyHostsIsTheCulprit) {
  Files files;
  for (int r = 0; r < 32; ++r) {
    std::vector<std::string> lines = initLines(r);
    if (r % 4 == 0) {
      lines.push_back(ncclLine(r,
                               "NCCL WARN NET/Socket : socketProgress: Connection closed by "
                               "remote peer 10.0.2.9<39111>"));
      lines.push_back(ncclLine(r,
                               "NCCL WARN socketStartConnect: Connect to 10.0.2.9<39111> "
                               "failed : Connection timed out"));
    }
    lines.push_back(watchdogLine(r, 77, "2024-05-01 11:00:00"));
    files.push_back({fmt::format("rank{}.txt", r), lines});
  }
  const auto d = analyzeMemory(files);
  EXPECT_EQ(d.layer, core::Layer::kHostNetwork) << d.verdict;
  ASSERT_FALSE(d.culprit.hosts.empty());
  EXPECT_EQ(d.culprit.hosts.front(), "10.0.2.9");
}

// No lower-layer error; one rank's last enqueued collective is behind everybody else's.
TEST(ScenarioTest, LowestLastEnqueuedNamesTheRankBehind) {
  Files files;
  for (int r = 0; r < 16; ++r) {
    const long enq = r == 11 ? 411 : 412;
    files.push_back(
        {fmt::format("rank_{}.log", r),
         {watchdogLine(r, enq, "2024-05-01 12:00:00"),
          fmt::format("[rank{}]:[E ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0(default_pg) Rank {}] "
                      "Exception (either an error or timeout) detected by watchdog at work: {}, "
                      "last enqueued NCCL work: {}, last completed NCCL work: {}.",
                      r, r, enq, enq, enq - 1)}});
  }
  const auto d = analyzeMemory(files);
  EXPECT_EQ(d.layer, core::Layer::kApplication) << d.verdict;
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{11});
  EXPECT_NE(d.verdict.find("411"), std::string::npos) << d.verdict;
}

// A GPU falls off the bus on one host; its ranks' peers later report transport errors.
TEST(ScenarioTest, EarliestRootCauseOutranksLaterNetworkErrors) {
  Files files;
  files.push_back({"node05/dmesg.txt",
                   {"2024-05-01T09:59:58 node05 kernel: NVRM: Xid (PCI:0000:41:00): 79, pid=0, "
                    "GPU has fallen off the bus."}});
  for (int r = 0; r < 16; ++r) {
    files.push_back({fmt::format("rank_{}.log", r),
                     {"[2024-05-01 10:00:30] " +
                          ncclLine(r,
                                   "NCCL WARN NET/IB : Got completion from peer 10.0.0.41<1> "
                                   "with status=12 opcode=0 len=0 vendor err 129"),
                      watchdogLine(r, 9, "2024-05-01 10:10:00")}});
  }
  const auto d = analyzeMemory(files);
  EXPECT_EQ(d.layer, core::Layer::kGpu) << d.verdict;
  EXPECT_TRUE(hasHost(d, "node05"));
}

// Several ranks on one host log Xid 48: the host is named.
TEST(ScenarioTest, RanksOnOneHostFailingTogetherPointAtTheHost) {
  Files files;
  for (int r = 0; r < 16; ++r) {
    std::vector<std::string> lines = initLines(r);
    if (r / kRanksPerHost == 1) {
      lines.push_back(ncclLine(r, "NCCL WARN Cuda failure 'uncorrectable ECC error encountered'"));
    }
    lines.push_back(watchdogLine(r, 5, "2024-05-01 10:10:00"));
    files.push_back({fmt::format("rank_{}.log", r), lines});
  }
  const auto d = analyzeMemory(files);
  EXPECT_EQ(d.layer, core::Layer::kGpu) << d.verdict;
  EXPECT_EQ(d.culprit.hosts, std::vector<std::string>{"node01"});
}

// Flight Recorder dumps: rank 2 recorded a different collective at the same sequence number.
TEST(ScenarioTest, FlightRecorderDumpsRevealMismatchedCollectives) {
  Files files;
  for (int r = 0; r < 4; ++r) {
    const char* op = r == 2 ? "nccl:all_gather" : "nccl:all_reduce";
    files.push_back(
        {fmt::format("nccl_trace_rank_{}", r),
         {"{", "\"version\": \"2.4\",",
          fmt::format("\"pg_status\": {{\"0\": {{\"last_enqueued_collective\": 8, "
                      "\"last_started_collective\": 8, \"last_completed_collective\": 7}}}},"),
          fmt::format("\"entries\": [{{\"collective_seq_id\": 8, \"pg_id\": 0, \"profiling_name\": "
                      "\"{}\", \"state\": \"started\"}}]",
                      op),
          "}"}});
  }
  const auto d = analyzeMemory(files);
  EXPECT_EQ(d.layer, core::Layer::kApplication) << d.verdict;
  EXPECT_NE(d.verdict.find("nccl:all_gather"), std::string::npos) << d.verdict;
}

// 8 ranks by NCCL's init lines; 7 time out in the same collective, rank 5 never logs a line.
TEST(ScenarioTest, ARankAbsentFromTheLogsIsNamed) {
  Files files;
  for (int r = 0; r < 8; ++r) {
    if (r == 5) continue;
    files.push_back(
        {fmt::format("rank_{}.log", r),
         {ncclLine(r, fmt::format("NCCL INFO comm 0x5555 rank {} nranks 8 cudaDev {} - Init "
                                  "COMPLETE",
                                  r, r % kRanksPerHost)),
          watchdogLine(r, 17, "2024-05-01 10:10:00")}});
  }
  const auto d = analyzeMemory(files);
  EXPECT_EQ(d.layer, core::Layer::kApplication) << d.verdict;
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{5}) << d.verdict;
  EXPECT_FALSE(d.evidence.empty());
}

// Every rank wrote something: nobody is absent, and the rank-absent finding stays away.
TEST(ScenarioTest, NoRankIsAbsentWhenEveryRankLogged) {
  Files files;
  for (int r = 0; r < 4; ++r) {
    files.push_back({fmt::format("rank_{}.log", r),
                     {ncclLine(r, fmt::format("NCCL INFO comm 0x5555 rank {} nranks 4", r)),
                      watchdogLine(r, 3, "2024-05-01 10:10:00")}});
  }
  const auto d = analyzeMemory(files);
  for (const auto& f : d.findings) EXPECT_NE(f.id, "application.rank-absent") << f.verdict;
}

// Context alone (no error line) still points somewhere: that layer, with low confidence.
TEST(ScenarioTest, ContextAloneGivesALayerWithLowConfidence) {
  const auto d = analyzeMemory(
      {{"p2p.txt",
        {"Device=0 CANNOT Access Peer Device=1", "Device=1 CANNOT Access Peer Device=0"}}});
  EXPECT_TRUE(d.conclusive);
  EXPECT_EQ(d.layer, core::Layer::kGpu) << d.verdict;
  EXPECT_EQ(d.confidence, "low");
}

// The runner-up is the best finding of another layer.
TEST(ScenarioTest, TheRunnerUpComesFromAnotherLayer) {
  const auto d =
      analyzeMemory({{"rank_0.log",
                      {ncclLine(0,
                                "NCCL WARN socketStartConnect: Connect to 10.0.1.2<33815> failed : "
                                "Connection refused"),
                       "NVRM: Xid (PCI:0000:41:00): 79, pid=0, GPU has fallen off the bus."}}});
  EXPECT_EQ(d.layer, core::Layer::kGpu) << d.verdict;
  EXPECT_EQ(d.runner_up, core::Layer::kHostNetwork) << d.runner_up_verdict;
}

// A root cause of another layer close behind the top one makes the verdict one level less sure.
TEST(ScenarioTest, AContestedRootCauseIsLessSure) {
  const std::string gpu = ncclLine(0,
                                   "NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both "
                                   "on CUDA device 1a000");
  const std::string ring =
      ncclLine(0, "NCCL WARN Error : ring 0 does not loop back to start (1 != 0)");
  const auto alone = analyzeMemory({{"rank_0.log", {gpu}}});
  const auto both = analyzeMemory({{"rank_0.log", {gpu, ring}}});
  EXPECT_EQ(alone.layer, core::Layer::kApplication) << alone.verdict;  // two ranks, one GPU
  EXPECT_EQ(alone.confidence, "medium");
  EXPECT_EQ(both.confidence, "low") << both.verdict;
}

// Two hosts load different NCCL builds: a library root cause, whatever else fails later.
TEST(ScenarioTest, DifferentNcclVersionsAcrossRanksAreALibraryFault) {
  Files files;
  for (int r = 0; r < 16; r += 8) {
    files.push_back({fmt::format("rank_{}.log", r),
                     {ncclLine(r, r == 0 ? "NCCL INFO NCCL version 2.14.3+cuda11.7"
                                         : "NCCL INFO NCCL version 2.19.3+cuda12.2"),
                      watchdogLine(r, 4, "2024-05-01 10:10:00")}});
  }
  const auto d = analyzeMemory(files);
  EXPECT_EQ(d.layer, core::Layer::kLibrary) << d.verdict;
  EXPECT_NE(d.verdict.find("2.14.3"), std::string::npos) << d.verdict;
  EXPECT_NE(d.verdict.find("2.19.3"), std::string::npos) << d.verdict;
}

// One version, printed with and without its CUDA suffix, is one version.
TEST(ScenarioTest, OneNcclVersionInSeveralFormsIsNoMismatch) {
  const auto d = analyzeMemory({{"rank_0.log",
                                 {ncclLine(0, "NCCL INFO NCCL version 2.21.5+cuda12.4"),
                                  "RuntimeError: NCCL error: unhandled system error, NCCL version "
                                  "2.21.5"}}});
  for (const auto& f : d.findings) EXPECT_NE(f.id, "library.nccl-version-mismatch") << f.verdict;
}

TEST(ScenarioTest, NothingConclusiveSaysWhatItSaw) {
  const auto d = analyzeMemory({{"rank_0.log", initLines(0)}});
  EXPECT_FALSE(d.conclusive);
  EXPECT_NE(d.verdict.find("NCCL 2.21.5"), std::string::npos) << d.verdict;
}

}  // namespace
}  // namespace ccscope::diagnostics
