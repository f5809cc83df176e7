// The records of a `ccscope pairs` run as reports see them (docs/burnin.md): the units, the best
// figure of every pair measured, and the verdicts per host and per link.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace ccscope::reports {

struct PairVerdict {
  std::string metric;  // "bandwidth", "p99"
  std::string kind;    // "host", "link"
  std::string unit_a, unit_b;
  double share = 1, z = 0;
  std::string verdict;  // "degraded", "failed"
  std::string text() const;
};

struct PairMatrix {
  std::string scope, transport;
  std::vector<std::string> units;
  // [a][b], symmetric, NaN where the pair was not measured: the best of its measurements.
  std::vector<std::vector<double>> bw_gbps, p99_us, p50_us;
  std::vector<PairVerdict> verdicts;
  size_t pairs = 0;  // pair records read (retests included)

  // A `pairs_run`, `pair` or `pair_verdict` record (others are ignored); an error names the
  // field that is missing or of the wrong type.
  core::Status add(const nlohmann::json& record);
  int unitIndex(const std::string& label);  // -1 when unknown
};

// "pairs_run", "pair", "pair_verdict", "pairs_summary".
bool isPairRecord(const std::string& type);

}  // namespace ccscope::reports
