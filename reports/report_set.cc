#include "reports/report_set.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>

#include "reports/csv_writer.h"
#include "reports/html_writer.h"
#include "reports/jsonl_reader.h"
#include "reports/junit_writer.h"
#include "reports/markdown_writer.h"

namespace ccscope::reports {

using core::Code;
using core::Status;

core::Status parseCriteria(const std::string& tolerance, const std::string& min_busbw,
                           const std::string& max_lat, Criteria& criteria) {
  if (!tolerance.empty()) {
    CCSCOPE_ASSIGN_OR_RETURN(criteria.tolerance, parseTolerance(tolerance));
  }
  CCSCOPE_ASSIGN_OR_RETURN(auto mins, parseThresholds(min_busbw, LimitKind::kMinBusbw));
  CCSCOPE_ASSIGN_OR_RETURN(auto maxs, parseThresholds(max_lat, LimitKind::kMaxLatency));
  criteria.limits.insert(criteria.limits.end(), mins.begin(), mins.end());
  criteria.limits.insert(criteria.limits.end(), maxs.begin(), maxs.end());
  return Status::ok();
}

namespace {

// Writes to a temporary name and renames, so a failed write never leaves half a report.
Status writeFile(const std::string& path, const char* what,
                 const std::function<void(std::ostream&)>& write) {
  if (path.empty()) return Status::ok();
  if (path == "-") {
    write(std::cout);
    std::cout.flush();
    return Status::ok();
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return Status(Code::kInvalidArgument, fmt::format("cannot write {} report '{}': {}", what,
                                                        path, std::strerror(errno)));
    write(out);
    out.flush();
    if (!out) return Status(Code::kSystem, fmt::format("error writing {} report '{}'", what, path));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status(Code::kSystem,
                  fmt::format("cannot rename '{}' to '{}': {}", tmp, path, std::strerror(errno)));
  return Status::ok();
}

}  // namespace

core::Status writeReportFiles(const ReportModel& model, const ReportOptions& o) {
  CCSCOPE_RETURN_IF_ERROR(
      writeFile(o.html_path, "HTML", [&](std::ostream& s) { writeHtml(model, s); }));
  CCSCOPE_RETURN_IF_ERROR(
      writeFile(o.md_path, "Markdown", [&](std::ostream& s) { writeMarkdown(model, s); }));
  CCSCOPE_RETURN_IF_ERROR(
      writeFile(o.csv_path, "CSV", [&](std::ostream& s) { writeCsv(model, s); }));
  CCSCOPE_RETURN_IF_ERROR(
      writeFile(o.junit_path, "JUnit", [&](std::ostream& s) { writeJunit(model, s); }));
  return Status::ok();
}

ReportVerdict verdictOf(const ReportModel& model) {
  ReportVerdict v;
  v.exit_code = model.passed() ? 0 : 1;
  v.failures = model.failureLines();
  v.rows = model.rows.size();
  v.wrong_rows = model.count(FailureKind::kWrongResults);
  v.limit_rows = model.count(FailureKind::kThreshold);
  v.regressed_rows = model.count(FailureKind::kRegression);
  return v;
}

core::Result<ReportVerdict> writeReports(const std::vector<RunRecords>& runs,
                                         const ReportOptions& options) {
  std::vector<RunRecords> baseline;
  const bool has_baseline = !options.baseline_path.empty();
  if (has_baseline) {
    CCSCOPE_ASSIGN_OR_RETURN(baseline, readResultsFile(options.baseline_path));
    size_t rows = 0;
    for (const RunRecords& r : baseline) rows += r.rows.size();
    if (rows == 0)
      return Status(Code::kInvalidArgument,
                    fmt::format("baseline '{}' holds no result rows", options.baseline_path));
  }
  const ReportModel model = buildReportModel(runs, baseline, has_baseline, options.criteria);
  CCSCOPE_RETURN_IF_ERROR(writeReportFiles(model, options));
  return verdictOf(model);
}

}  // namespace ccscope::reports
