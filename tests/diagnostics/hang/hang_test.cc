// `ccscope hang`'s parts without a GPU: Xid and kernel-log lines, what a process is doing, the
// verdicts the analyzer draws from a snapshot, and the /proc scan of real Python processes
// started here. The RAS client's tests are in ras_client_test.cc.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "diagnostics/analyze/analyzer.h"
#include "diagnostics/analyze/hang_snapshot.h"
#include "diagnostics/analyze/hang_tracker.h"
#include "diagnostics/analyze/rule_loader.h"
#include "diagnostics/hang/kernel_log.h"
#include "diagnostics/hang/proc_scan.h"
#include "tests/diagnostics/hang/hang_test_util.h"

namespace ccscope::diagnostics {
namespace {

using test_hang::kData;
using test_hang::newAnalyzer;
using test_hang::readAll;
using test_hang::snapshotWithRasText;

// --- Kernel log ------------------------------------------------------------------------------

TEST(KernelLogTest, XidLinesAsDriversPrintThem) {
  XidLine x;
  ASSERT_TRUE(
      parseXidLine("NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, "
                   "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal "
                   "Instruction Parameter",
                   x));
  EXPECT_EQ(x.device, "PCI:0000:cb:00");
  EXPECT_EQ(x.code, 13);
  EXPECT_EQ(x.pid, -1);
  ASSERT_TRUE(
      parseXidLine("NVRM: Xid (PCI:0000:38:00): 43, pid=2924364, name=pt_main_thread, "
                   "Ch 00000008",
                   x));
  EXPECT_EQ(x.code, 43);
  EXPECT_EQ(x.pid, 2924364);
  EXPECT_EQ(x.process, "pt_main_thread");
  ASSERT_TRUE(parseXidLine("NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.", x));
  EXPECT_EQ(x.code, 79);
  EXPECT_EQ(x.text, "GPU has fallen off the bus.");
  ASSERT_TRUE(
      parseXidLine("[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, "
                   "pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC "
                   "response from GPU4 GSP!",
                   x));
  EXPECT_EQ(x.code, 119);
  EXPECT_FALSE(parseXidLine("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.159.04", x));
}

TEST(KernelLogTest, KeepsTheLinesThatMatterSinceTheJobStarted) {
  const std::string path = testing::TempDir() + "/dmesg.txt";
  std::ofstream(path)
      << "[  100.000001] e1000e: eth0 NIC Link is Up\n"
         "[  120.500000] NVRM: Xid (PCI:0000:3b:00): 48, pid=2211, DBE (0x1) detected\n"
         "[ 9000.100000] usb 1-1: new high-speed USB device\n"
         "[ 9001.200000] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', "
         "name=<unknown>, GPU has fallen off the bus.\n"
         "[ 9002.000000] Out of memory: Killed process 4242 (python3)\n";
  KernelLog all = readKernelLog(path, 0);
  EXPECT_TRUE(all.error.empty());
  EXPECT_EQ(all.lines.size(), 3u);
  KernelLog recent = readKernelLog(path, 5000);
  ASSERT_EQ(recent.lines.size(), 2u);
  EXPECT_NE(recent.lines[0].find(": 79,"), std::string::npos);
  EXPECT_FALSE(readKernelLog(path + ".absent", 0).error.empty());
}

// --- What a process is doing ----------------------------------------------------------------

HangProcess proc(int rank, const std::string& stack) {
  HangProcess p;
  p.pid = 1000 + rank;
  p.rank = rank;
  p.state = 'S';
  p.py_stack = stack;
  HangThread t;
  t.tid = p.pid;
  t.name = "pt_main_thread";
  t.state = 'S';
  t.cpu_percent = 0;
  p.threads.push_back(t);
  return p;
}

const char* kInAllReduce =
    "Process 580: /usr/bin/python3 train.py\n"
    "Python v3.12.3 (/usr/bin/python3.12)\n\n"
    "Thread 580 (idle): \"MainThread\"\n"
    "    wait (torch/distributed/distributed_c10d.py:3036)\n"
    "    all_reduce (torch/distributed/distributed_c10d.py:2950)\n"
    "    train_step (train.py:40)\n"
    "    <module> (train.py:60)\n"
    "Thread 612 (idle): \"Thread-1\"\n"
    "    run (threading.py:1012)\n";
const char* kInLoader =
    "Process 581: /usr/bin/python3 train.py\n"
    "Python v3.12.3 (/usr/bin/python3.12)\n\n"
    "Thread 581 (idle): \"MainThread\"\n"
    "    load_batch (train.py:42)\n"
    "    train_step (train.py:38)\n"
    "    <module> (train.py:60)\n";
const char* kInSynchronize =
    "Thread 581 (active+gil): \"MainThread\"\n"
    "    synchronize (torch/cuda/__init__.py:985)\n"
    "    forward (model.py:77)\n"
    "    <module> (train.py:60)\n";

TEST(ClassifyTest, FromPythonStacks) {
  auto a = classifyProcess(proc(0, kInAllReduce));
  EXPECT_EQ(a.activity, Activity::kInCollective);
  a = classifyProcess(proc(1, kInLoader));
  EXPECT_EQ(a.activity, Activity::kHostCode);
  EXPECT_EQ(a.where, "load_batch (train.py:42)");
  a = classifyProcess(proc(1, kInSynchronize));
  EXPECT_EQ(a.activity, Activity::kWaitingOnGpu);
  // The real sglang rank in NCCL (py-spy --native): a C++ wait under all_gather_into_tensor.
  a = classifyProcess(
      proc(3,
           "Thread 117489 (idle): \"MainThread\"\n"
           "    pthread_cond_wait (libc.so.6)\n"
           "    std::condition_variable::wait (libstdc++.so.6.0.33)\n"
           "    0x7caaa50b1a9b (?)\n"
           "    all_gather_into_tensor (torch/distributed/distributed_c10d.py:4193)\n"
           "    prepare_mlp_sync_batch_raw (scheduler_dp_attn_mixin.py:202)\n"));
  EXPECT_EQ(a.activity, Activity::kInCollective);
}

TEST(ClassifyTest, WithoutAStack) {
  HangProcess p = proc(1, "");
  EXPECT_EQ(classifyProcess(p).activity, Activity::kUnknown);
  p.gpu_sm_percent = 100;
  p.threads[0].state = 'R';
  p.threads[0].cpu_percent = 99;
  EXPECT_EQ(classifyProcess(p).activity, Activity::kWaitingOnGpu);
  p.gpu_sm_percent = 0;
  p.threads[0].state = 'S';
  p.threads[0].wchan = "do_nanosleep";
  auto a = classifyProcess(p);
  EXPECT_EQ(a.activity, Activity::kHostCode);
  EXPECT_NE(a.where.find("do_nanosleep"), std::string::npos) << a.where;
  p.state = 'Z';
  EXPECT_EQ(classifyProcess(p).activity, Activity::kExited);
  p.state = 'S';
  HangThread t;
  t.tid = 1200;
  t.state = 'D';
  t.wchan = "uvm_spin_loop";
  p.threads.push_back(t);
  EXPECT_EQ(classifyProcess(p).activity, Activity::kDriverBlocked);
}

// --- Verdicts from snapshots ----------------------------------------------------------------

reports::Diagnosis judge(const HangSnapshot& s) {
  auto a = newAnalyzer();
  a->analyzeSnapshot(s, s.node + ".json");
  return a->finish();
}

TEST(HangVerdictTest, TheRankBehindInItsOwnCode) {
  HangSnapshot s = snapshotWithRasText("real-2.28.9-opcount-mismatch.txt");
  s.processes = {proc(0, kInAllReduce), proc(1, kInLoader)};
  const auto d = judge(s);
  EXPECT_EQ(d.layer, core::Layer::kApplication) << d.verdict;
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{1});
  EXPECT_NE(d.verdict.find("never issued collective #6 (AllReduce)"), std::string::npos)
      << d.verdict;
  EXPECT_NE(d.verdict.find("load_batch (train.py:42)"), std::string::npos) << d.verdict;
  EXPECT_EQ(d.confidence, "high");
}

TEST(HangVerdictTest, TheRankBehindStuckOnItsGpu) {
  HangSnapshot s = snapshotWithRasText("real-2.28.9-opcount-mismatch.txt");
  s.processes = {proc(0, kInAllReduce), proc(1, kInSynchronize)};
  s.processes[1].gpu_sm_percent = 100;
  const auto d = judge(s);
  EXPECT_EQ(d.layer, core::Layer::kGpu) << d.verdict;
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{1});
}

TEST(HangVerdictTest, FromFlightRecorderDumpsWithoutRas) {
  HangSnapshot s;
  s.node = "node-a";
  s.processes = {proc(0, kInAllReduce), proc(1, kInLoader)};
  for (int r = 0; r < 2; ++r) {
    nlohmann::json entries = nlohmann::json::array();
    for (int seq = 1; seq <= 6 - r; ++seq)
      entries.push_back({{"collective_seq_id", seq},
                         {"profiling_name", "nccl:all_reduce"},
                         {"pg_id", 0},
                         {"state", seq < 6 - r ? "completed" : "scheduled"}});
    s.processes[static_cast<size_t>(r)].fr_dump =
        nlohmann::json{{"rank", r}, {"entries", entries}}.dump();
  }
  const auto d = judge(s);
  EXPECT_EQ(d.layer, core::Layer::kApplication) << d.verdict;
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{1}) << d.verdict;
}

TEST(HangVerdictTest, EveryRankInTheCollectivePointsAtTheNetwork) {
  HangSnapshot s;
  s.node = "node-a";
  s.processes = {proc(0, kInAllReduce), proc(1, kInAllReduce)};
  s.processes[1].pid = 1001;
  auto d = judge(s);
  EXPECT_EQ(d.layer, core::Layer::kHostNetwork) << d.verdict;
  s.rdma_devices = {"mlx5_0"};
  d = judge(s);
  EXPECT_EQ(d.layer, core::Layer::kRdma) << d.verdict;
  s.processes[0].env["NCCL_IB_DISABLE"] = "1";
  d = judge(s);
  EXPECT_EQ(d.layer, core::Layer::kHostNetwork) << d.verdict;
}

TEST(HangVerdictTest, AnXidOutranksTheProgressOfRanks) {
  HangSnapshot s = snapshotWithRasText("real-2.28.9-opcount-mismatch.txt");
  s.processes = {proc(0, kInAllReduce), proc(1, "")};
  s.kernel_log = {
      "[ 9001.200000] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', "
      "name=<unknown>, GPU has fallen off the bus."};
  const auto d = judge(s);
  EXPECT_EQ(d.layer, core::Layer::kGpu) << d.verdict;
}

TEST(HangVerdictTest, ASnapshotSurvivesItsJson) {
  HangSnapshot s = snapshotWithRasText("real-2.28.9-opcount-mismatch.txt");
  s.processes = {proc(0, kInAllReduce), proc(1, kInLoader)};
  s.processes[1].gpu_sm_percent = 0;
  s.processes[1].env["RANK"] = "1";
  s.sources.push_back({"py-spy", "read", "2 stack(s)"});
  auto back = hangSnapshotFromJson(toJson(s));
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back->processes.size(), 2u);
  EXPECT_EQ(back->processes[1].py_stack, kInLoader);
  EXPECT_EQ(*back->processes[1].gpu_sm_percent, 0);
  EXPECT_EQ(back->ras_text, s.ras_text);
  EXPECT_EQ(judge(*back).verdict, judge(s).verdict);
  nlohmann::json future = toJson(s);
  future["version"] = 99;
  EXPECT_FALSE(hangSnapshotFromJson(future).isOk());
}

// --- /proc scan of real processes ------------------------------------------------------------

pid_t startPython(const std::string& code, std::vector<std::string> env) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> envp;
    envp.reserve(env.size() + 2);
    env.push_back("PATH=/usr/bin:/bin");
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string py = CCSCOPE_TEST_PYTHON, dash_c = "-c";
    std::string body = code;
    char* argv[] = {py.data(), dash_c.data(), body.data(), nullptr};
    execve(argv[0], argv, envp.data());
    _exit(127);
  }
  return pid;
}

TEST(ProcScanTest, FindsTheRanksOfARealJobAndWhatTheyDo) {
  const std::string port = std::to_string(40000 + getpid() % 20000);
  auto env = [&](int rank) {
    return std::vector<std::string>{"RANK=" + std::to_string(rank),
                                    "LOCAL_RANK=" + std::to_string(rank),
                                    "WORLD_SIZE=3",
                                    "MASTER_ADDR=127.0.0.1",
                                    "MASTER_PORT=" + port,
                                    "NCCL_DEBUG=INFO",
                                    "SECRET_TOKEN=x"};
  };
  const pid_t spinner = startPython("while True: pass", env(0));
  const pid_t sleeper = startPython("import time\ntime.sleep(60)", env(1));
  // Rank 2 starts a worker of its own (as a data loader does): a helper, not a rank.
  const pid_t parent = startPython(
      "import os, time\npid = os.fork()\nif pid == 0:\n    time.sleep(60)\n    os._exit(0)\n"
      "time.sleep(60)",
      env(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ProcScanOptions opt;
  opt.sample_s = 0.5;
  opt.job = "127.0.0.1:" + port;  // other tests' jobs may run beside this one
  const ProcScan scan = scanProcesses(opt);
  std::map<int, const HangProcess*> mine;
  for (const auto& p : scan.processes)
    if (p.pid == spinner || p.pid == sleeper || p.pid == parent) mine[p.rank] = &p;
  kill(spinner, SIGKILL);
  kill(sleeper, SIGKILL);
  kill(parent, SIGKILL);
  waitpid(spinner, nullptr, 0);
  waitpid(sleeper, nullptr, 0);
  waitpid(parent, nullptr, 0);
  ASSERT_EQ(mine.size(), 3u) << "found " << scan.processes.size() << " rank process(es)";
  const HangProcess& r0 = *mine[0];
  const HangProcess& r1 = *mine[1];
  EXPECT_EQ(r0.world_size, 3);
  EXPECT_EQ(r1.local_rank, 1);
  EXPECT_EQ(r0.job, r1.job);
  EXPECT_NE(r0.job.find(port), std::string::npos) << r0.job;
  EXPECT_EQ(r0.env.count("NCCL_DEBUG"), 1u);
  EXPECT_EQ(r0.env.count("SECRET_TOKEN"), 0u);  // only what a diagnosis needs is kept
  // The spinner's share depends on the load beside it (ctest -j); the sleeper's stays near 0.
  EXPECT_GT(r0.cpu_percent, 10) << threadStateSummary(r0);
  EXPECT_GT(r0.cpu_percent, r1.cpu_percent + 5);
  EXPECT_LT(r1.cpu_percent, 5);
  EXPECT_EQ(r1.state, 'S');
  ASSERT_FALSE(r1.threads.empty());
  EXPECT_EQ(r1.threads[0].tid, r1.pid);
  EXPECT_EQ(mine[2]->helpers.size(), 1u);  // the forked worker hangs under rank 2
  // A process named by --pid that is gone is said so.
  ProcScanOptions gone;
  gone.pids = {spinner};
  gone.sample_s = 0;
  const ProcScan none = scanProcesses(gone);
  EXPECT_TRUE(none.processes.empty());
  ASSERT_FALSE(none.problems.empty());
  EXPECT_NE(none.problems[0].find("no such process"), std::string::npos);
}

TEST(ProcScanTest, RankFromEveryLauncher) {
  int local = -1, world = -1;
  EXPECT_EQ(rankFromEnvironment({{"OMPI_COMM_WORLD_RANK", "5"},
                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                 {"OMPI_COMM_WORLD_SIZE", "8"}},
                                &local, &world),
            5);
  EXPECT_EQ(local, 1);
  EXPECT_EQ(world, 8);
  EXPECT_EQ(rankFromEnvironment({{"PMI_RANK", "3"}}), 3);
  EXPECT_EQ(rankFromEnvironment({{"SLURM_PROCID", "7"}}), 7);
  EXPECT_EQ(rankFromEnvironment({{"RANK", "x"}}), -1);
}

}  // namespace
}  // namespace ccscope::diagnostics
