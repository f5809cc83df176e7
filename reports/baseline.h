// Baseline comparison: each row against the baseline row with the same key, on busbw, p50 and
// p99 latency. A metric regresses only when it got worse by more than the tolerance AND by more
// than the noise the two runs show in their own per-iteration spread (docs/reports.md):
//   sigma = max(stdev now, stdev baseline)            (per-iteration, not the standard error)
//   busbw : busbw dropped > tol     and time_us grew > sigma
//   p50   : p50 grew > tol          and p50 grew     > sigma
//   p99   : p99 grew > tol          and p99 grew     > max(sigma, baseline p99 - baseline p50)
#pragma once

#include <array>
#include <string>

#include "core/status.h"
#include "reports/measurement.h"

namespace ccscope::reports {

inline constexpr double kDefaultTolerance = 0.10;

// "10%", "10" (both ten percent) or "2.5%"; must lie in [0, 100).
core::Result<double> parseTolerance(const std::string& text);

// What identifies a row across runs: everything but the measured values.
std::string rowKey(const Measurement& m);
// A readable name of the row: "allreduce ring shm 1048576B float sum out-of-place".
std::string rowName(const Measurement& m);

struct MetricDelta {
  const char* metric = "";  // "busbw", "p50", "p99"
  const char* unit = "";    // "GB/s", "us"
  double base = 0, now = 0;
  double change = 0;      // fraction, positive = worse (busbw lower, latency higher)
  double excess_us = 0;   // how much slower in microseconds
  double noise_us = 0;    // the spread the excess had to beat
  bool compared = false;  // false when the baseline value is zero (nothing to compare)
  bool regressed = false;
};

struct BaselineComparison {
  Measurement base;
  std::array<MetricDelta, 3> deltas;  // busbw, p50, p99
  bool regressed() const;
  std::string describe() const;  // the regressed metrics, one phrase each
};

BaselineComparison compareToBaseline(const Measurement& now, const Measurement& base,
                                     double tolerance);

}  // namespace ccscope::reports
