// One rank of `ccscope pairs`: the rounds of disjoint pairs, each pair measured over the job's
// transport, rank 0 streaming every pair as a `pair` record, then the matrix analysis, a retest
// of the suspects against known-good partners, and the verdicts per host and per link.
#pragma once

#include <cstdint>
#include <string>

#include "burnin/pair_analysis.h"
#include "burnin/pair_measure.h"
#include "burnin/pairing.h"
#include "launch/environment.h"

namespace ccscope::app {

struct PairsOptions {
  std::string transport = "tcp";
  burnin::Scope scope = burnin::Scope::kHosts;
  int rounds_k = 0;  // 0: every pair (circle method); else that many random rounds
  uint64_t seed = 1;
  bool retest = true;
  burnin::PairSettings pair;
  burnin::Thresholds bandwidth;
  burnin::Thresholds latency{0.33, 0.1, 4};  // p99: 3x the predicted is degraded, 10x failed
  std::string json_path, ifname, store_bind;
};

// The exit code: 0 nothing found, 1 a host or link degraded or failed, 3 a pair hung or a rank
// was lost (the pairs measured before are in the JSON Lines file).
int runPairsRank(const PairsOptions& o, const launch::LaunchInfo& info);

}  // namespace ccscope::app
