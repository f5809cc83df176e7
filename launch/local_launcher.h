// `--np N` without an external launcher: this process becomes the launcher. It hosts the
// rendezvous store, re-executes itself N times with CCSCOPE_RANK/WORLD_SIZE/STORE/JOB_TOKEN set,
// reaps the ranks and makes sure none outlives the run.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace ccscope::launch {

struct LocalLaunchOptions {
  int np = 1;
  double op_timeout_s = 60;  // after a rank fails, the rest get this + a grace period
  std::string bind_host = "127.0.0.1";
  int port = 0;                           // 0: ephemeral
  std::vector<int>* rank_pids = nullptr;  // where set: filled with each rank's pid, by rank
};

// Exit status of the job: the most severe rank exit code (signals count as a hang, 3).
core::Result<int> runLocalRanks(const LocalLaunchOptions& opts,
                                const std::vector<std::string>& argv);

}  // namespace ccscope::launch
