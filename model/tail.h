// Tail-aware prediction: a synchronous collective whose every step waits for the slowest of
// the links it uses. Each link's one-way latency is log-normal (from its p50 and p99, as
// `ccscope pairs` measures them) plus the step's bytes at the link's bandwidth; a step's time is
// the maximum over links, whose distribution is the product of the links' distributions
// (order statistics, on a grid); the collective's time is the sum of its steps, sampled
// (Monte Carlo) when steps x trials is small and by the central limit theorem beyond
// (docs/model.md, "Tails").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ccscope::model {

struct LinkTail {
  double p50_s = 0, p99_s = 0;  // one-way latency of a small message
  double bytes_per_s = 0;       // 0: bandwidth not limiting
  double links = 1;             // how many links share these figures
};

struct TailQuery {
  std::vector<LinkTail> links;
  int steps = 1;          // synchronous steps, each over every link
  double step_bytes = 0;  // per link per step
  int trials = 4000;
  uint64_t seed = 1;
};

struct TailResult {
  double p50_s = 0, p99_s = 0, mean_s = 0;
  double step_p50_s = 0, step_mean_s = 0;
  std::string method;  // "monte-carlo" or "normal"
};

core::Result<TailResult> predictTail(const TailQuery& q);

// The links of a ring allreduce of `ranks` ranks and `bytes` per rank: 2(n-1) steps of
// bytes/n over every ring link.
TailQuery ringAllreduceTail(std::vector<LinkTail> links, int ranks, double bytes);

}  // namespace ccscope::model
