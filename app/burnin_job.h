// One rank of `ccscope burnin --profile FILE.toml`: preflight (a failure makes the test invalid),
// the pairs matrix, collective sweeps with thresholds, a soak with drift detection and a
// congestion phase, then one verdict per host and per link (docs/burnin.md).
#pragma once

#include <string>
#include <vector>

#include "burnin/profile.h"
#include "launch/environment.h"

namespace ccscope::app {

struct BurninOptions {
  burnin::Profile profile;
  std::string json_path, store_bind;
  std::vector<std::string> argv;
};

// The exit code: 0 every host and link passed; 1 one degraded or failed; 2 the test is invalid
// (preflight failed: fix the environment first); 3 a rank hung or was lost (what was measured
// before is in the JSON Lines file).
int runBurninRank(const BurninOptions& o, const launch::LaunchInfo& info);

}  // namespace ccscope::app
