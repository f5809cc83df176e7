// One rank of `ccscope pairs`: the rounds of disjoint pairs, each pair measured over the job's
// transport, rank 0 streaming every pair as a `pair` record, then the matrix analysis, a retest
// of the suspects against known-good partners, and the verdicts per host and per link.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "burnin/pair_analysis.h"
#include "burnin/pair_measure.h"
#include "burnin/pairing.h"
#include "launch/environment.h"
#include "launch/store_client.h"
#include "reports/jsonl_writer.h"
#include "transports/transport.h"

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
  // Non-empty: why p99 is not judged (ranks outnumber a machine's CPUs: latencyUnjudged).
  std::string latency_unjudged;
  std::string json_path, ifname, store_bind;
};

class PairsBook;

// Every rank: measures its pair of each round (if it has one; `settings` per pair), the lead
// publishing the figures under "<key>/<n>/<lead>" for the round's number n (from `round_no`,
// which counts on); all meet at the round's barrier, then rank 0 hands every pair of the round
// to `on_pair` with its figures (JSON as pairsFiguresJson makes them), and all meet again before
// the next round.
core::Status runPairRounds(
    launch::StoreClient& c, transports::Transport& t, const transports::MemoryRegion& buf,
    const std::vector<burnin::Round>& rounds, const burnin::PairSettings& settings,
    const std::string& key, int& round_no,
    const std::function<core::Status(int round, const burnin::Pair&, const nlohmann::json&)>&
        on_pair);
nlohmann::json pairsFiguresJson(const burnin::PairFigures& f);

// The pairs plan inside a job that has its store, transport and hosts already (`ccscope pairs`,
// and the pairs phase of `ccscope burnin`): the rounds, the retests of the suspects, and on
// rank 0 the book, the `pair` records and the table.
class PairsPhase {
 public:
  PairsPhase(const PairsOptions& o, launch::StoreClient& c, transports::Transport& t,
             const transports::MemoryRegion& buf, reports::JsonLinesWriter* json,
             std::string key = "pairs");
  ~PairsPhase();
  core::Status run(const std::vector<std::string>& hosts);
  // Rank 0, after run(): prints and records the verdicts; the `pairs_summary` record.
  nlohmann::json finish() const;

 private:
  core::Status rounds(const std::vector<burnin::Round>& rounds, bool retest);
  core::Status retestSuspects();
  bool root() const { return c_.rank() == 0; }

  const PairsOptions& o_;
  launch::StoreClient& c_;
  transports::Transport& t_;
  const transports::MemoryRegion& buf_;
  reports::JsonLinesWriter* json_;
  std::string key_;
  std::unique_ptr<PairsBook> book_;  // rank 0
  int round_no_ = 0;
};

// The exit code: 0 nothing found, 1 a host or link degraded or failed, 3 a pair hung or a rank
// was lost (the pairs measured before are in the JSON Lines file).
int runPairsRank(const PairsOptions& o, const launch::LaunchInfo& info);

}  // namespace ccscope::app
