// Pinning a rank to one CPU (`ccscope bench --bind core`): local rank r takes the r-th CPU of
// the set the process may run on, round robin, so with more ranks than cores the ranks that
// share a core are fixed for the whole job. With 2-4 ranks a core it makes the figures no
// steadier from one process to the next (docs/performance.md, "Algorithm family and --algo
// auto"), so it is an option, not the default.
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
