#include "core/affinity.h"

#include <sched.h>

#include <cerrno>

namespace ccscope::core {

Result<std::vector<int>> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return errnoStatus("sched_getaffinity", errno);
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  if (out.empty()) return Status(Code::kInternal, "sched_getaffinity: no CPU allowed");
  return out;
}

int cpuForLocalRank(const std::vector<int>& allowed, int local_rank) {
  const int n = static_cast<int>(allowed.size());
  return allowed[((local_rank % n) + n) % n];
}

Status pinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) return errnoStatus("sched_setaffinity", errno);
  return Status::ok();
}

}  // namespace ccscope::core
