// Cross-line reasoning that no single line carries: the frame a fatal signal interrupted (read
// from the handler's backtrace), and a phase the logs open but never close.
#include <gtest/gtest.h>

#include "diagnostics/analyze/crash_site.h"
#include "test_util.h"

namespace ccscope::diagnostics {
namespace {

using testing::analyzeMemory;
using testing::Files;
using testing::hasFinding;

TEST(FrameObjectTest, ReadsTheObjectOfEachBacktraceFormat) {
  // UCX's handler.
  EXPECT_EQ(frameObject(" 4  /opt/ucx/lib/libuct.so.0(uct_md_query+0x1f) [0x7f9a57049d8f]"),
            "libuct.so.0");
  // Open MPI's handler.
  EXPECT_EQ(frameObject("[ 1] /usr/lib/x86_64-linux-gnu/libnccl.so.2(+0x5f1a2)[0x7f0c1d5f1a2]"),
            "libnccl.so.2");
  // glibc backtrace_symbols without an index.
  EXPECT_EQ(frameObject("/lib64/libibverbs.so.1(ibv_cmd_create_qp+0x4a)[0x7f00aa12]"),
            "libibverbs.so.1");
  // gdb.
  EXPECT_EQ(frameObject("#3  0x00007f1e2a in cuLaunchKernel () from /lib64/libcuda.so.1"),
            "libcuda.so.1");
  // c10 stack frames.
  EXPECT_EQ(frameObject("frame #2: <unknown function> + 0x1d2 (0x7f12 in /opt/lib/libmpi.so.40)"),
            "libmpi.so.40");
  // UCX debug builds: the function, no object.
  EXPECT_EQ(frameObject(" 1 0x000000000001cb8b uct_rc_verbs_handle_failure()  src/uct/ib/rc.c:63"),
            "uct_rc_verbs_handle_failure");
  // Not frames: no address, or nothing that names an object.
  EXPECT_EQ(frameObject(" 4  /opt/ucx/lib/libuct.so.0(uct_md_query)"), "");
  EXPECT_EQ(frameObject("[0] NCCL INFO comm 0x55d0 rank 0 nranks 2"), "");
  EXPECT_EQ(frameObject("nccl-tests: 1048576 bytes"), "");
  EXPECT_EQ(frameObject("[gpu3:07121] Failing at address: 0x10"), "");
  // gdb with symbols: the function.
  EXPECT_EQ(frameObject("#1  0x00007f1e2a in ncclProxyProgress (state=0x1) at proxy.cc:12"),
            "ncclProxyProgress");
}

std::vector<std::string> ucxCrash(const std::string& faulting_frame) {
  return {"[node7:5486:0:5486] Caught signal 11 (Segmentation fault: address not mapped)",
          "==== backtrace (tid:   5486) ====",
          " 0  /usr/lib/libucs.so.0(ucs_handle_error+0x294) [0x7f9a570a4c44]",
          " 1  /usr/lib/libucs.so.0(+0x31dff) [0x7f9a570a4dff]",
          " 2  /lib64/libc.so.6(+0x3e6f0) [0x7f9a56e3e6f0]",
          faulting_frame,
          " 4  /usr/bin/python3(PyObject_Call+0x5c) [0x55d0c1f4a2bc]",
          "================================="};
}

TEST(CrashSiteTest, TheInterruptedFrameNamesTheLayer) {
  auto lib = analyzeMemory({{"r0.log", ucxCrash(" 3  /usr/lib/libnccl.so.2(+0x8e2f1) [0x7f1]")}});
  EXPECT_EQ(lib.layer, core::Layer::kLibrary);
  EXPECT_TRUE(hasFinding(lib, "library.crash-in-library"));
  EXPECT_NE(lib.verdict.find("libnccl.so.2"), std::string::npos) << lib.verdict;

  auto gpu = analyzeMemory({{"r0.log", ucxCrash(" 3  /lib64/libcuda.so.1(+0x2e2f1) [0x7f1]")}});
  EXPECT_EQ(gpu.layer, core::Layer::kGpu);
  auto rdma = analyzeMemory({{"r0.log", ucxCrash(" 3  /lib64/libmlx5.so.1(+0x1e2f1) [0x7f1]")}});
  EXPECT_EQ(rdma.layer, core::Layer::kRdma);
}

TEST(CrashSiteTest, AFaultInTheApplicationOrTheHandlerAloneBlamesNoLibrary) {
  auto app = analyzeMemory({{"r0.log", ucxCrash(" 3  /home/u/train.bin(main+0x11) [0x4011]")}});
  EXPECT_FALSE(hasFinding(app, "library.crash-in-library"));
  // Only the handler's own frames: UCX printed them, it did not fault.
  auto handler = analyzeMemory(
      {{"r0.log",
        {"[n:1:0:1] Caught signal 11 (Segmentation fault: address not mapped)",
         " 0  /usr/lib/libucs.so.0(ucs_handle_error+0x294) [0x7f9a570a4c44]",
         " 1  /usr/lib/libucs.so.0(ucs_debug_backtrace_create+0x1f) [0x7f9a570a4dff]"}}});
  EXPECT_FALSE(hasFinding(handler, "library.crash-in-library"));
}

TEST(CrashSiteTest, UcxDebugBacktracesNameTheFunction) {
  // The trampoline printed as libc symbols, then NCCL's frames.
  auto d =
      analyzeMemory({{"r0.log",
                      {"[8d6b:3039 :0:3095] Caught signal 11 (Segmentation fault)",
                       "==== backtrace (tid:   3095) ====", " 0 0x0000000000043090 killpg()  ???:0",
                       " 1 0x000000000018bb41 __nss_database_lookup()  ???:0",
                       " 2 0x000000000007587d ncclGroupEnd()  ???:0",
                       " 3 0x0000000000008609 start_thread()  ???:0"}}});
  EXPECT_TRUE(hasFinding(d, "library.crash-in-library"));
  // A transport's failure handler aborting on a completion error is not the library's bug.
  auto failure = analyzeMemory(
      {{"r0.log",
        {"[n:1:0:1] Caught signal 6 (Aborted)", "==== backtrace (tid:   7131) ====",
         " 0 0x0000000000053b83 ucs_debug_print_backtrace()  src/ucs/debug/debug.c:653",
         " 1 0x0000000000043090 __restore_rt()  ???:0",
         " 2 0x000000000001cb8b uct_rc_verbs_handle_failure()  src/uct/ib/rc/verbs/rc.c:63"}}});
  EXPECT_FALSE(hasFinding(failure, "library.crash-in-library"));
}

TEST(CrashSiteTest, WithoutATrampolineOnlyUcxsOwnFramesAreSkipped) {
  // aarch64: the trampoline is the vDSO's.
  auto arm = analyzeMemory({{"r0.log",
                             {"[n:1:0:1] Caught signal 11 (Segmentation fault)",
                              " 0  /usr/lib/libucs.so.0(ucs_handle_error+0x2e4) [0xffff1]",
                              " 1  linux-vdso.so.1(__kernel_rt_sigreturn+0x0) [0xffff2]",
                              " 2  /usr/lib/libcuda.so.1(+0x2e2f1) [0xffff3]"}}});
  EXPECT_EQ(arm.layer, core::Layer::kGpu);
  // No trampoline and unnamed handler frames: UCX's run is skipped, the next frame decides.
  auto bare = analyzeMemory({{"r0.log",
                              {"[n:1:0:1] Caught signal 11 (Segmentation fault)",
                               " 0  /usr/lib/libucs.so.0(+0x1decc) [0x7f711a457ecc]",
                               " 1  /usr/lib/libucs.so.0(+0x1e134) [0x7f711a458134]",
                               " 2  /home/u/app(main+0x11) [0x4011]"}}});
  EXPECT_FALSE(hasFinding(bare, "library.crash-in-library"));
  // Another handler's frames without a trampoline conclude nothing.
  auto other = analyzeMemory(
      {{"r0.log",
        {"Segmentation fault (core dumped)", "/usr/lib/libnccl.so.2(+0x5f1a2)[0x7f0c1d5f1a2]"}}});
  EXPECT_FALSE(hasFinding(other, "library.crash-in-library"));
}

TEST(CrashSiteTest, TheCrashKeepsItsOwnPositionAgainstEarlierCauses) {
  // An earlier root cause in the same file (weight within the earliest-wins window) stays
  // ahead of a crash whose window closes only at the end of the file.
  const std::string connect_failed =
      "node1:7:7 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<5> "
      "failed : Software caused connection abort";
  auto d = analyzeMemory({{"r0.log",
                           {connect_failed, "[n:1:0:1] Caught signal 11 (Segmentation fault)",
                            " 0  /usr/lib/libucs.so.0(ucs_handle_error+0x294) [0x7f1]",
                            " 1  /lib64/libc.so.6(+0x3e6f0) [0x7f2]",
                            " 2  /usr/lib/libnccl.so.2(+0x8e2f1) [0x7f3]"}}});
  ASSERT_FALSE(d.findings.empty());
  bool crash_listed = hasFinding(d, "library.crash-in-library");
  EXPECT_TRUE(crash_listed);
  EXPECT_NE(d.layer, core::Layer::kLibrary) << d.verdict;
  // A bus error is where a mapping ran out: no library is blamed for it.
  auto bus = analyzeMemory({{"r0.log",
                             {"[n:1:0:1] Caught signal 7 (Bus error: nonexistent physical address)",
                              " 0  /lib64/libc.so.6(+0x3e6f0) [0x7f2]",
                              " 1  /usr/lib/libnccl.so.2(+0x8e2f1) [0x7f3]"}}});
  EXPECT_FALSE(hasFinding(bus, "library.crash-in-library"));
}

TEST(CrashSiteTest, AnAbortIsBlamedOnWhatCalledTheRuntime) {
  // Open MPI's handler: the trampoline, raise and abort, then the library that aborted.
  auto d = analyzeMemory(
      {{"r3.log",
        {"[gpu3:07121] *** Process received signal ***", "[gpu3:07121] Signal: Aborted (6)",
         "[gpu3:07121] [ 0] /lib64/libpthread.so.0(+0xf630)[0x7f5c1a]",
         "[gpu3:07121] [ 1] /lib64/libc.so.6(gsignal+0x37)[0x7f5c19]",
         "[gpu3:07121] [ 2] /lib64/libc.so.6(abort+0x148)[0x7f5c18]",
         "[gpu3:07121] [ 3] /opt/ompi/lib/libopen-pal.so.40(+0x6a1b2)[0x7f5b]",
         "[gpu3:07121] *** End of error message ***"}}});
  EXPECT_TRUE(hasFinding(d, "library.crash-in-library"));
}

std::vector<std::string> elasticStart() {
  return {"INFO:torch.distributed.elastic.agent.server.api:[default] starting workers",
          "INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous'ing worker group"};
}

TEST(PhaseTest, ALogThatEndsInsideTheRendezvousPointsAtBootstrap) {
  auto d = analyzeMemory({{"agent0.log", elasticStart()}});
  EXPECT_EQ(d.layer, core::Layer::kBootstrap);
  EXPECT_EQ(d.confidence, "low");

  auto done = elasticStart();
  done.push_back("INFO:...api:[default] Rendezvous complete for workers. Result:");
  EXPECT_EQ(analyzeMemory({{"agent0.log", done}}).layer, core::Layer::kNone);

  // Closed, then opened again (a restart) and never closed: stuck in the second round.
  auto again = done;
  again.push_back(elasticStart()[1]);
  EXPECT_EQ(analyzeMemory({{"agent0.log", again}}).layer, core::Layer::kBootstrap);
}

TEST(PhaseTest, ACloseInAnotherFileSettlesThePhase) {
  // Lightning prints "registered" on rank 0 only: rank 1's file never closes the phase itself.
  Files files = {{"rank0.log",
                  {"Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2",
                   "All distributed processes registered. Starting with 2 processes"}},
                 {"rank1.log", {"Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2"}}};
  EXPECT_FALSE(hasFinding(analyzeMemory(files), "bootstrap.lightning-ddp-init-unfinished"));
  files[0].second.pop_back();
  EXPECT_TRUE(hasFinding(analyzeMemory(files), "bootstrap.lightning-ddp-init-unfinished"));
  // Rank 1's log alone cannot show the close (rank 0 prints it): no verdict from it.
  EXPECT_FALSE(hasFinding(analyzeMemory({files[1]}), "bootstrap.lightning-ddp-init-unfinished"));
}

TEST(PhaseTest, OnlyAFileThatEndsClosedSettlesTheOthers) {
  auto restarted = elasticStart();
  restarted.push_back("INFO:...api:[default] Rendezvous complete for workers. Result:");
  restarted.push_back(elasticStart()[1]);  // the next round, never completed
  // Two agents, both stuck in the second round: each file closed once, none ended closed.
  EXPECT_EQ(analyzeMemory({{"agent0.log", restarted}, {"agent1.log", restarted}}).layer,
            core::Layer::kBootstrap);
  auto done = elasticStart();
  done.push_back("INFO:...api:[default] Rendezvous complete for workers. Result:");
  EXPECT_EQ(analyzeMemory({{"agent0.log", elasticStart()}, {"agent1.log", done}}).layer,
            core::Layer::kNone);
}

std::vector<std::string> ncclTestsHeader(const std::string& host_a, const std::string& host_b) {
  return {"# Using devices",
          "#  Rank  0 Group  0 Pid  41223 on " + host_a + " device  0 [0x1b] NVIDIA H100",
          "#  Rank  1 Group  0 Pid  41224 on " + host_b + " device  0 [0x1b] NVIDIA H100",
          "#       size         count      type   redop    root     time   algbw   busbw #wrong"};
}

TEST(PhaseTest, NcclTestsStalledBeforeItsFirstRowIsGpuOnlyOnOneHost) {
  auto one = analyzeMemory({{"out.log", ncclTestsHeader("node03", "node03")}});
  EXPECT_EQ(one.layer, core::Layer::kGpu);
  auto two = analyzeMemory({{"out.log", ncclTestsHeader("node03", "node04")}});
  EXPECT_FALSE(hasFinding(two, "gpu.nccltests-stalled-one-host"));
  auto ran = ncclTestsHeader("node03", "node03");
  ran.push_back(
      "           8             2     float     sum      -1    18.31    0.00    0.00      0");
  EXPECT_FALSE(hasFinding(analyzeMemory({{"out.log", ran}}), "gpu.nccltests-stalled-one-host"));
}

}  // namespace
}  // namespace ccscope::diagnostics
