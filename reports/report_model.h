// What every report format shows, computed once: the rows of all runs with their verdicts
// (wrong results, per-size limits, baseline regressions), the chart series, and the overall
// pass/fail. Writers only format a ReportModel; they decide nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reports/baseline.h"
#include "reports/run_records.h"
#include "reports/thresholds.h"

namespace ccscope::reports {

struct Criteria {
  double tolerance = kDefaultTolerance;  // fraction (0.1 = 10%)
  std::vector<Threshold> limits;         // --min-busbw and --max-lat together
};

enum class FailureKind { kWrongResults, kThreshold, kRegression };
const char* failureKindName(FailureKind k);  // "wrong-results", "threshold", "regression"

struct RowFailure {
  FailureKind kind = FailureKind::kWrongResults;
  std::string message;
};

struct ReportRow {
  size_t run = 0;     // index into ReportModel::runs
  size_t series = 0;  // index into ReportModel::series
  Measurement m;
  std::optional<BaselineComparison> baseline;  // when the baseline has the same row
  std::vector<RowFailure> failures;
  bool failed() const { return !failures.empty(); }
  bool has(FailureKind k) const;
};

// One line in the charts: run · transport · algorithm; the run is left out when the report has
// only one, and " · dtype op" is added when a run mixes several dtypes or ops.
struct Series {
  std::string name;
  std::string collective;  // one pair of charts per collective
  size_t run = 0;
  // Rows drawn, ascending size, one per size: out-of-place rows, or in-place ones when a series
  // has no out-of-place rows (the table shows both).
  std::vector<size_t> points;
};

struct ReportModel {
  std::vector<RunRecords> runs;
  std::vector<ReportRow> rows;
  std::vector<Series> series;
  std::vector<std::string> collectives;  // in order of first appearance
  Criteria criteria;
  bool has_baseline = false;
  std::string baseline_source;
  size_t unmatched_rows = 0;                  // rows the baseline does not have
  std::vector<std::string> unmatched_limits;  // limits no row had the size of

  size_t count(FailureKind k) const;  // rows failing for this reason
  size_t failedRows() const;
  size_t pairVerdicts() const;  // hosts and links `ccscope pairs` found at fault
  // Burn-in runs not passed: degraded, failed, invalid, or ended before their summary.
  size_t burninFailures() const;
  bool passed() const {
    return failedRows() == 0 && unmatched_limits.empty() && pairVerdicts() == 0 &&
           burninFailures() == 0;
  }
  std::vector<std::string> failureLines() const;  // "run: row: reason", one per failure
  std::vector<const Diagnosis*> diagnoses() const;
};

ReportModel buildReportModel(std::vector<RunRecords> runs, const std::vector<RunRecords>& baseline,
                             bool has_baseline, const Criteria& criteria);

}  // namespace ccscope::reports
