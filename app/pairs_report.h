// Rank 0's book of `ccscope pairs`: the units the plan covers, every pair measured (as `pair`
// JSON Lines records and table rows), the suspects to retest, and the verdicts per host and per
// link (`pair_verdict` and `pairs_summary` records; docs/burnin.md).
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "app/pairs_job.h"
#include "burnin/pair_analysis.h"
#include "burnin/pairing.h"
#include "reports/jsonl_writer.h"

namespace ccscope::app {

class PairsBook {
 public:
  void start(const PairsOptions& o, const std::vector<std::string>& hosts,
             const std::vector<burnin::Round>& rounds);
  nlohmann::json runRecord(const PairsOptions& o, const std::vector<burnin::Round>& rounds) const;
  // The `pair` record of one measured pair (figures as the lead published them).
  nlohmann::json add(int round, bool retest, const burnin::Pair& p, const nlohmann::json& figures);
  // Suspect links again, suspect hosts against two known-good partners each, and up to two
  // pairs of known-good units as controls, each pair once (called once per run).
  std::vector<burnin::Pair> retestPairs(const PairsOptions& o);
  // Prints and records the verdicts; returns the `pairs_summary` record.
  nlohmann::json finish(const PairsOptions& o, reports::JsonLinesWriter* json) const;

 private:
  burnin::MatrixFit fit(bool latency, const PairsOptions& o) const;
  // A finding stands only if its own retests agree, judged against the healthy controls
  // measured with them: a figure that one scheduler stall set is not measured again. 0:
  // confirmed, or no retest or no control to judge by; else the retests' share.
  double clearedByRetest(const burnin::Finding& f, bool latency, const PairsOptions& o) const;
  bool partners(int unit_a, int unit_b) const;
  void planControls(const std::set<int>& flagged, std::set<burnin::Pair>& out);

  std::vector<std::string> hosts_;           // per rank
  std::vector<std::string> units_;           // the units in the plan
  std::vector<int> unit_of_;                 // per rank: its unit, -1 when not in the plan
  std::vector<int> rep_;                     // per unit: the rank standing for it
  std::vector<int> local_index_;             // per rank: its order among its host's ranks (rails)
  std::vector<burnin::PairValue> bw_, lat_;  // per pair of the plan: GB/s one way, 1 / p99
  // Retests: of suspects, and of healthy control pairs measured alongside them.
  std::vector<burnin::PairValue> retest_bw_, retest_lat_, control_bw_, control_lat_;
  std::set<burnin::Pair> controls_;
  bool rails_ = false;  // partners within a rail only
};

// Where `ranks` share a machine whose ranks may run on only `cpus` CPUs (the most crowded one,
// launch::mostCrowdedMachine), a half round trip's tail is the scheduler's time slice, not the
// link's: the reason p99 goes unjudged, else "".
std::string latencyUnjudged(int ranks, int cpus);

// How many hosts and links a `pairs_summary` record finds degraded or failed.
int pairsVerdictCount(const nlohmann::json& summary);

// Seconds a plan of `rounds` takes, about, and the sentence that says how that was reckoned.
double pairsEstimateSeconds(const PairsOptions& o, size_t rounds, std::string* how);
void printHeader(const nlohmann::json& run);
void printPairRow(const nlohmann::json& pair);

}  // namespace ccscope::app
