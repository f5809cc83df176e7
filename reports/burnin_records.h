// The records of a `ccscope burnin` run as reports see them (docs/burnin.md, "Output"): the
// preflight, every soak series as it was sampled, the soak and congestion verdicts and the
// summary. A run killed half-way has no summary; what was sampled still renders.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace ccscope::reports {

struct BurninPreflight {
  std::string layer, probe, outcome, detail;
};

struct SoakSeries {
  std::string kind, unit_a, unit_b, metric;  // metric: "bandwidth", "p99" (us), "busbw"
  std::vector<double> t_s, value;
  // From its soak_verdict, when the run got that far.
  std::string verdict;
  double since_s = -1;
  std::string why;
  std::string name() const;  // "h1 <-> h2 bandwidth", "allreduce busbw"
};

struct CongestionRepeat {
  int repeat = 0;
  double alone_p99_us = 0, loaded_p99_us = 0, alone_gbps = 0, loaded_gbps = 0;
  double p99_factor = 0, bw_factor = 0;
};

struct BurninFindingRecord {
  std::string kind, unit_a, unit_b, verdict, phase, why;
  double since_s = -1;
  std::string text() const;  // "failed link a <-> b (soak, from 21.6 s): why"
};

struct BurninRecords {
  std::string profile, transport;
  int ranks = 0;
  std::vector<BurninPreflight> preflight;
  double soak_duration_s = 0, soak_interval_s = 0;
  std::vector<SoakSeries> soak;
  std::vector<CongestionRepeat> congestion;
  std::string congestion_note, p99_spread, bw_spread;
  // The summary: "" until its record; "pass", "degraded", "failed" or "invalid".
  std::string verdict;
  std::map<std::string, std::string> hosts;
  std::vector<BurninFindingRecord> findings;
  std::vector<std::string> reasons, phases;

  // A burnin record (isBurninRecord); an error names the field missing or of the wrong type.
  core::Status add(const nlohmann::json& record);
  // Not passed: degraded, failed, invalid, or no summary (the run ended before its verdict).
  bool failed() const { return verdict != "pass"; }

 private:
  core::Status addSample(const nlohmann::json& record);
  core::Status addSummary(const nlohmann::json& record);
  SoakSeries& series(const std::string& kind, const std::string& a, const std::string& b,
                     const std::string& metric);
  std::map<std::string, size_t> index_;  // series key -> its place in `soak`
};

// "burnin_run", "preflight", "soak_run", "soak_sample", "soak_verdict", "congestion",
// "congestion_summary", "burnin_summary".
bool isBurninRecord(const std::string& type);

}  // namespace ccscope::reports
