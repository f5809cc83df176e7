// Pinning a rank to one CPU (`ccscope bench --bind core`): local rank r takes the r-th CPU of
// the set the process may run on, round robin. With more ranks than cores, each core's ranks
// are then fixed, and which ranks share a core no longer changes while a job runs (the
// scheduler's moves changed which algorithm was fastest from one process to the next:
// docs/performance.md, seventh session).
#pragma once

#include <vector>

#include "core/status.h"

namespace ccscope::core {

// The CPUs this process may run on, ascending.
Result<std::vector<int>> allowedCpus();
// The CPU of local rank `local_rank` among `allowed` (not empty): round robin.
int cpuForLocalRank(const std::vector<int>& allowed, int local_rank);
// Pins the calling thread (and the threads it starts afterwards) to `cpu`.
Status pinToCpu(int cpu);

}  // namespace ccscope::core
