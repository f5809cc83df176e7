#include "app/report_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "app/cli_options.h"
#include "reports/jsonl_reader.h"
#include "reports/report_set.h"

namespace ccscope::app {

namespace {

struct ReportCommandFlags {
  std::vector<std::string> inputs;
  ReportFlags report;
};

// Lines a CI log shows: the verdict, then each failure (capped; the reports keep all of them).
void printVerdict(const reports::ReportVerdict& v, size_t runs, std::FILE* out) {
  constexpr size_t kMaxPrinted = 100;
  fmt::print(out, "ccscope report: {} rows from {} run{}: {}\n", v.rows, runs, runs == 1 ? "" : "s",
             v.exit_code == 0 ? "passed" : "FAILED");
  if (v.exit_code == 0) return;
  fmt::print(out, "  {} regressed, {} with wrong results, {} over a limit\n", v.regressed_rows,
             v.wrong_rows, v.limit_rows);
  for (size_t i = 0; i < v.failures.size() && i < kMaxPrinted; ++i)
    fmt::print(out, "  FAIL {}\n", v.failures[i]);
  if (v.failures.size() > kMaxPrinted)
    fmt::print(out, "  ...and {} more (see the reports)\n", v.failures.size() - kMaxPrinted);
}

int runReport(ReportCommandFlags& f) {
  core::Status s = parseReportFlags(f.report);
  if (!s.isOk()) {
    std::fprintf(stderr, "ccscope report: error: %s\n", s.message().c_str());
    return kExitUsage;
  }
  auto runs = reports::readResultsFiles(f.inputs);
  if (!runs) {
    std::fprintf(stderr, "ccscope report: error: %s\n", runs.status().message().c_str());
    return kExitUsage;
  }
  auto verdict = reports::writeReports(*runs, f.report.options);
  if (!verdict) {
    std::fprintf(stderr, "ccscope report: error: %s\n", verdict.status().message().c_str());
    return kExitUsage;
  }
  const reports::ReportOptions& o = f.report.options;
  const bool stdout_taken =
      o.html_path == "-" || o.md_path == "-" || o.csv_path == "-" || o.junit_path == "-";
  printVerdict(*verdict, runs->size(), stdout_taken ? stderr : stdout);
  return verdict->exit_code == 0 ? kExitOk : kExitFailed;
}

}  // namespace

Command addReportCommand(CLI::App& root) {
  auto f = std::make_shared<ReportCommandFlags>();
  CLI::App* sub = root.add_subcommand(
      "report", "Render JSON Lines results as HTML/Markdown/CSV/JUnit; compare with a baseline");
  sub->add_option("results", f->inputs, "JSON Lines files written by --json (several: merged)")
      ->required();
  addReportOptions(*sub, f->report);
  return {sub, [f] { return runReport(*f); }};
}

}  // namespace ccscope::app
