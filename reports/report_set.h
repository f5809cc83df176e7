// Every report format in one call, for `ccscope report` (records read back from JSON Lines) and
// for `ccscope bench --html ... --baseline ...` (records collected live with RecordCollector):
//
//   reports::RecordCollector collected;            // add to the bench's sinks on rank 0
//   ...run...
//   auto verdict = reports::writeReports(collected.runs(), options);
//   if (!verdict) { print verdict.status().message(); return 2; }
//   return verdict->exit_code;                     // 0 passed, 1 failed
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "reports/report_model.h"
#include "reports/run_records.h"

namespace ccscope::reports {

struct ReportOptions {
  // Output files; empty: not written; "-": standard output.
  std::string html_path, md_path, csv_path, junit_path;
  std::string baseline_path;  // JSON Lines of an earlier run; empty: no comparison
  Criteria criteria;          // tolerance and per-size limits
};

// Fills `options` from the flag texts ("10%", "1M=5,64M=20", "8=30"); errors are usage errors.
core::Status parseCriteria(const std::string& tolerance, const std::string& min_busbw,
                           const std::string& max_lat, Criteria& criteria);

struct ReportVerdict {
  int exit_code = 0;                  // 0: passed; 1: wrong results, a limit or a regression
  std::vector<std::string> failures;  // one line per failure ("run: row: kind: why")
  size_t rows = 0, wrong_rows = 0, limit_rows = 0, regressed_rows = 0;
};

// Reads the baseline, evaluates every row, writes each requested file. An error status means a
// bad input or an unwritable output (exit code 2 for the caller), not a failed check.
core::Result<ReportVerdict> writeReports(const std::vector<RunRecords>& runs,
                                         const ReportOptions& options);

// The same, from an evaluated model (tests, or callers that built one already).
core::Status writeReportFiles(const ReportModel& model, const ReportOptions& options);
ReportVerdict verdictOf(const ReportModel& model);

}  // namespace ccscope::reports
