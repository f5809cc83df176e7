// A transport-free simulator for schedules: runs every rank's schedule with per-pair FIFO
// matching (the executor's rule), tracking for every element which ranks' contributions it
// holds, so a test can prove each output element is reduced from every rank exactly once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/schedule.h"

namespace ccscope::collectives::testing {

struct SimResult {
  bool ok = true;
  std::string error;                           // first violation found
  std::vector<std::vector<uint64_t>> output;   // per rank, per element: contributor bitmask
  std::vector<uint64_t> elems_sent;            // per rank
};

// inputs: element count of each rank's input/output buffers (allreduce: equal to count).
SimResult simulate(const std::vector<Schedule>& per_rank, uint64_t buffer_elems);

}  // namespace ccscope::collectives::testing
