// Finds a training job's processes on this node from /proc and reads what each is doing:
// state, wait channel, threads and their CPU use over a short interval, the environment that
// names its rank, the NCCL and torch libraries it mapped. Read-only: nothing is signalled,
// attached to or paused. Kernel stacks need root; a file that cannot be read is reported.
#pragma once

#include <string>
#include <vector>

#include "diagnostics/analyze/hang_snapshot.h"

namespace ccscope::diagnostics {

struct ProcScanOptions {
  std::vector<int> pids;  // these processes only (empty: find the job's processes)
  double sample_s = 0.5;  // CPU use is measured over this interval
  std::string proc_root = "/proc";
  int self_pid = 0;  // never listed (0: getpid())
  std::string job;   // only the job whose key holds this text ("" any)
};

struct ProcScan {
  std::vector<HangProcess> processes;  // ranks, by rank then pid
  std::vector<std::string> problems;   // files that could not be read, pids that are gone
  std::vector<std::string> jobs;       // distinct job keys among the processes found
  bool kernel_stacks = false;          // some kernel stack could be read
  // Set when the processes found belong to several jobs (none chosen by --job or --pid), or
  // --job matched none: the jobs found, to choose from ("torch 10.0.0.1:29500: ranks 0-7").
  std::vector<std::string> choices;
};

// The rank a process's environment gives (torchrun, Open MPI, MPICH/PMI, PMIx, Slurm), or -1.
int rankFromEnvironment(const std::vector<std::pair<std::string, std::string>>& env,
                        int* local_rank = nullptr, int* world_size = nullptr);

ProcScan scanProcesses(const ProcScanOptions& opt);

// The thread states a process's threads are in, as "2 R, 5 S, 1 D".
std::string threadStateSummary(const HangProcess& p);

}  // namespace ccscope::diagnostics
