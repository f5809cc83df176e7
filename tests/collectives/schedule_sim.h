// A transport-free simulator for schedules: runs every rank's schedule with per-pair FIFO
// matching (the executor's rule), tracking for every element which ranks' contributions it
// holds, so a test can prove each output element is reduced from every rank exactly once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collectives/schedule.h"

namespace ccscope::collectives::testing {

struct SimResult {
  bool ok = true;
  std::string error;                          // first violation found
  std::vector<std::vector<uint64_t>> output;  // per rank, per element: contributor bitmask
  std::vector<uint64_t> elems_sent;           // per rank
};

// Buffers and initial input values per rank. For reductions, give each rank's input the bit of
// that rank (reduce ORs them and flags overlaps); for data movement, encode where each element
// came from (e.g. provenance(rank, index)) and compare the outputs with the expected placement.
struct SimSetup {
  std::vector<uint64_t> in_elems, out_elems;  // per rank
  std::function<uint64_t(int rank, uint64_t i)> input;
};
SimResult simulate(const std::vector<Schedule>& per_rank, const SimSetup& setup);

// Allreduce-shaped shorthand: `buffer_elems` in and out, input = bit of the rank.
SimResult simulate(const std::vector<Schedule>& per_rank, uint64_t buffer_elems);

inline uint64_t provenance(int rank, uint64_t i) { return (uint64_t(rank + 1) << 40) | i; }

}  // namespace ccscope::collectives::testing
