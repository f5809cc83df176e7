#include "diagnostics/live/library_init.h"

#include <gtest/gtest.h>

namespace ccscope::diagnostics {
namespace {

using core::Layer;
using nlohmann::json;

// What UCX 1.13 prints with UCX_LOG_LEVEL=info (ucp_init + a worker), and our helper's lines.
const std::vector<std::string> kHealthyUcx = {
    "ccscope-init: version 1.13.1",
    ("[1796004737.073751] [vm:18050:0]     ucp_context.c:1849 UCX  INFO  Version 1.13.1 (loaded "
     "from /lib/x86_64-linux-gnu/libucp.so.0)"),
    ("[1796004737.088027] [vm:18050:0]       rdmacm_cm.c:928  UCX  DIAG  rdma_create_event_channel "
     "failed: No such device"),
    ("[1796004737.088034] [vm:18050:0]      ucp_worker.c:1462 UCX  DIAG  failed to open CM on "
     "component rdmacm with status Input/output error"),
    ("[1796004737.088084] [vm:18050:0]          parser.c:1916 UCX  INFO  UCX_* env variable: "
     "UCX_LOG_LEVEL=info"),
    "ccscope-init: transports self/memory0 tcp/lo tcp/eth0 sysv/memory posix/memory cma/memory",
    "ccscope-init: ok"};

// UCX_TLS=nonexistent_tl.
const std::vector<std::string> kBadTls = {
    "ccscope-init: version 1.13.1",
    ("[1796004739.294437] [vm:18107:0]     ucp_context.c:1849 UCX  INFO  Version 1.13.1 (loaded "
     "from /lib/x86_64-linux-gnu/libucp.so.0)"),
    ("[1796004739.300755] [vm:18107:0]     ucp_context.c:1014 UCX  WARN  transport "
     "'nonexistent_tl' is not available, please use one or more of: cma, mm, posix, self, shm, "
     "sm, sysv, tcp"),
    ("[1796004739.300764] [vm:18107:0]     ucp_context.c:1276 UCX  ERROR no usable "
     "transports/devices (asked nonexistent_tl on all devices)"),
    "ccscope-init: error: ucp_init: No such device"};

ChildRun exited(std::vector<std::string> lines, int code) {
  ChildRun r;
  r.started = true;
  r.exit_code = code;
  r.lines = std::move(lines);
  return r;
}

InitCheck judge(const ChildRun& run) {
  auto analysis = analyzeLog(run.lines, "ucx-init");
  return judgeInitRun("ucx", run, analysis ? &*analysis : nullptr);
}

bool analyzerBuilt() { return analyzeLog({}, "x").has_value(); }

TEST(LibraryInitJudgeTest, AHealthyInitPassesWithVersionAndTransports) {
  InitCheck c = judge(exited(kHealthyUcx, 0));
  EXPECT_EQ(c.outcome, ProbeOutcome::kPass) << c.detail;
  EXPECT_EQ(c.version, "1.13.1");
  EXPECT_EQ(c.transports.size(), 6u);
  EXPECT_NE(c.detail.find("UCX 1.13.1 initialised"), std::string::npos) << c.detail;
}

TEST(LibraryInitJudgeTest, ARuleMatchOnTheLogFailsWithTheRulesVerdictAndTheLine) {
  if (!analyzerBuilt()) GTEST_SKIP() << "built without the rule set (toml++)";
  InitCheck c = judge(exited(kBadTls, 1));
  EXPECT_EQ(c.outcome, ProbeOutcome::kFail);
  EXPECT_NE(c.detail.find("transport 'nonexistent_tl'"), std::string::npos) << c.detail;
  EXPECT_NE(c.next_step.find("UCX_TLS"), std::string::npos) << c.next_step;
  ASSERT_GE(c.evidence.size(), 2u);
  EXPECT_NE(c.evidence[0].find("UCX  WARN  transport 'nonexistent_tl' is not available"),
            std::string::npos)
      << c.evidence[0];
  EXPECT_NE(c.evidence[1].find("UCX  ERROR no usable transports"), std::string::npos)
      << c.evidence[1];
  EXPECT_NE(c.evidence.back().find("exit 1"), std::string::npos) << c.evidence.back();
}

TEST(LibraryInitJudgeTest, AWarningAloneFailsEvenWhenInitSucceeds) {
  if (!analyzerBuilt()) GTEST_SKIP() << "built without the rule set (toml++)";
  auto lines = kHealthyUcx;
  lines.insert(lines.begin() + 2,
               "[1796004739.312145] [vm:18108:0]     ucp_context.c:1014 UCX  WARN  network device "
               "'nosuchdev0' is "
               "not available, please use one or more of: 'eth0'(tcp), 'lo'(tcp)");
  InitCheck c = judge(exited(lines, 0));
  EXPECT_EQ(c.outcome, ProbeOutcome::kFail);
  EXPECT_NE(c.detail.find("network device 'nosuchdev0'"), std::string::npos) << c.detail;
}

TEST(LibraryInitJudgeTest, RootFindingsOfOtherLayersDoNotFailTheLibrary) {
  // Without the rule set nothing is found at all, and the pass would say nothing.
  if (!analyzerBuilt()) GTEST_SKIP() << "built without the rule set (toml++)";
  auto lines = kHealthyUcx;
  lines.push_back("NVRM: GPU 0000:41:00.0: GPU has fallen off the bus.");
  EXPECT_EQ(judge(exited(lines, 0)).outcome, ProbeOutcome::kPass);
}

TEST(LibraryInitJudgeTest, AFailedHelperWithNoRuleMatchFailsWithItsOwnError) {
  InitCheck c = judge(exited(
      {"ccscope-init: version 1.13.1", "something odd", "ccscope-init: error: ucp_init: Busy"}, 1));
  EXPECT_EQ(c.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(c.detail, "UCX initialisation failed: ucp_init: Busy");
  EXPECT_EQ(c.evidence, std::vector<std::string>{"something odd"});
}

TEST(LibraryInitJudgeTest, AHungOrCrashedHelperFails) {
  ChildRun hung = exited({"ccscope-init: version 1.13.1", "last words"}, -1);
  hung.timed_out = true;
  hung.seconds = 5;
  InitCheck c = judge(hung);
  EXPECT_EQ(c.outcome, ProbeOutcome::kFail);
  EXPECT_NE(c.detail.find("did not finish within 5.0 s"), std::string::npos) << c.detail;
  ChildRun crashed = exited({"ccscope-init: version 1.13.1"}, -1);
  crashed.signal = 11;
  c = judge(crashed);
  EXPECT_EQ(c.outcome, ProbeOutcome::kFail);
  EXPECT_NE(c.detail.find("signal 11"), std::string::npos) << c.detail;
}

TEST(LibraryInitJudgeTest, NotCompiledInOrNotStartedIsASkip) {
  InitCheck c = judge(exited({"ccscope-init: skip built without UCX"}, 5));
  EXPECT_EQ(c.outcome, ProbeOutcome::kSkip);
  EXPECT_EQ(c.detail, "skipped: built without UCX");
  ChildRun never;
  never.start_error = "cannot execute /x";
  EXPECT_EQ(judge(never).outcome, ProbeOutcome::kSkip);
}

TEST(LibraryInitJudgeTest, MpiStates) {
  EXPECT_EQ(judgeMpi(MpiState::kNotLaunched, "").outcome, ProbeOutcome::kSkip);
  EXPECT_EQ(judgeMpi(MpiState::kUp, "Open MPI v4.1.4").outcome, ProbeOutcome::kPass);
  EXPECT_EQ(judgeMpi(MpiState::kUp, "").detail, "MPI initialised");
  EXPECT_EQ(judgeMpi(MpiState::kDown, "").outcome, ProbeOutcome::kFail);
}

json rankChecks(const InitCheck& ucx, const InitCheck& mpi = judgeMpi(MpiState::kNotLaunched, "")) {
  InitCheck nccl;
  nccl.detail = "skipped: no GPU";
  return {{"ucx", toJson(ucx)}, {"nccl", toJson(nccl)}, {"mpi", toJson(mpi)}};
}

TEST(LibraryInitAggregateTest, EveryRankHealthySumsUpVersionAndTransports) {
  InitCheck a = judge(exited(kHealthyUcx, 0));
  InitCheck b = a;
  b.transports = {"tcp/eth1", "posix/memory"};
  auto r = judgeLibraryInit({rankChecks(a), rankChecks(b)}, {"h0", "h1"});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].name, "ucx init");
  EXPECT_EQ(r[0].layer, Layer::kLibrary);
  EXPECT_EQ(r[0].outcome, ProbeOutcome::kPass);
  EXPECT_EQ(r[0].detail,
            "UCX 1.13.1 initialised on every rank; transports: self, tcp (lo, eth0, eth1), sysv, "
            "posix, cma");
  EXPECT_EQ(r[1].outcome, ProbeOutcome::kSkip);
  EXPECT_EQ(r[1].detail, "skipped: no GPU");
  EXPECT_EQ(r[2].outcome, ProbeOutcome::kSkip);
}

TEST(LibraryInitAggregateTest, FailingRanksAreNamedAndTheFirstSpeaksForTheRest) {
  InitCheck ok = judge(exited(kHealthyUcx, 0));
  InitCheck bad;
  bad.outcome = ProbeOutcome::kFail;
  bad.detail = "UCX reported an error: no usable transports/devices";
  bad.evidence = {"ucp_context.c:1276 UCX  ERROR no usable transports/devices"};
  bad.next_step = "Check UCX_TLS";
  auto r = judgeLibraryInit({rankChecks(ok), rankChecks(bad), rankChecks(ok), rankChecks(bad)},
                            {"h0", "h0", "h1", "h1"});
  EXPECT_EQ(r[0].outcome, ProbeOutcome::kFail);
  EXPECT_EQ(r[0].detail, bad.detail);
  EXPECT_EQ(r[0].next_step, "Check UCX_TLS");
  EXPECT_EQ(r[0].culprit.ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(r[0].culprit.hosts, (std::vector<std::string>{"h0", "h1"}));
  EXPECT_EQ(r[0].evidence,
            (std::vector<std::string>{
                "rank 1 (h0): ucp_context.c:1276 UCX  ERROR no usable transports/devices",
                "the same on ranks 3"}));
}

TEST(LibraryInitAggregateTest, MpiUpOnEveryRank) {
  InitCheck ok = judge(exited(kHealthyUcx, 0));
  InitCheck mpi = judgeMpi(MpiState::kUp, "Open MPI v4.1.4");
  auto r = judgeLibraryInit({rankChecks(ok, mpi), rankChecks(ok, mpi)}, {"h0", "h0"});
  EXPECT_EQ(r[2].outcome, ProbeOutcome::kPass);
  EXPECT_EQ(r[2].detail, "MPI initialised on every rank (Open MPI v4.1.4)");
}

// The whole per-rank path with a stand-in helper: it must see UCX_LOG_LEVEL=info, and what it
// prints is judged like the real library's log.
TEST(LibraryInitRunTest, TheHelpersLogIsJudged) {
  LibraryInitContext ctx;
  ctx.timeout_s = 5;
  ctx.child_command = {"/bin/sh", "-c",
                       "echo \"ccscope-init: version 9.9 for $1 at $UCX_LOG_LEVEL\"; "
                       "echo 'ucp_context.c:1014 UCX  WARN  transport '\"'x'\"' is not available, "
                       "please use one or more "
                       "of: tcp'; exit 1",
                       "helper"};
  json j = runLibraryInit(ctx);
  InitCheck ucx = initCheckFromJson(j["ucx"]);
  EXPECT_EQ(ucx.version, "9.9 for ucx at info");
  EXPECT_EQ(ucx.outcome, ProbeOutcome::kFail);
  if (analyzerBuilt()) {
    EXPECT_NE(ucx.detail.find("transport 'x'"), std::string::npos) << ucx.detail;
  }
  EXPECT_EQ(initCheckFromJson(j["nccl"]).detail, "skipped: no GPU");
  EXPECT_EQ(initCheckFromJson(j["mpi"]).outcome, ProbeOutcome::kSkip);
}

TEST(LibraryInitRunTest, AHelperThatHangsFailsWithinTheDeadline) {
  LibraryInitContext ctx;
  ctx.timeout_s = 0.5;
  ctx.child_command = {"/bin/sh", "-c", "echo 'ccscope-init: version 1'; sleep 60", "helper"};
  int64_t t0 = core::nowNs();
  InitCheck ucx = initCheckFromJson(runLibraryInit(ctx)["ucx"]);
  EXPECT_LT((core::nowNs() - t0) / 1e9, 3.0);
  EXPECT_EQ(ucx.outcome, ProbeOutcome::kFail);
  EXPECT_NE(ucx.detail.find("did not finish"), std::string::npos) << ucx.detail;
}

}  // namespace
}  // namespace ccscope::diagnostics
