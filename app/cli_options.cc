#include "app/cli_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "app/command.h"
#include "core/units.h"

namespace ccscope::app {

void addLaunchOptions(CLI::App& sub, LaunchFlags& f) {
  sub.add_option("--np", f.np, "Local ranks to start when no launcher is around")
      ->check(CLI::Range(1, 4096));
  sub.add_option("--store", f.store, "Rendezvous store HOST:PORT (external launchers)");
  sub.add_option("--store-port", f.store_port, "Port of the rendezvous store");
  sub.add_option("--store-bind", f.store_bind, "Address the rendezvous store binds to");
}

LaunchOptions toLaunchOptions(const LaunchFlags& f, double timeout_s) {
  return LaunchOptions{f.np, timeout_s, f.store, f.store_bind, f.store_port, {}};
}

void addReportOptions(CLI::App& sub, ReportFlags& f) {
  reports::ReportOptions& o = f.options;
  sub.add_option("--html", o.html_path, "Self-contained HTML report with charts");
  sub.add_option("--md", o.md_path, "Markdown summary (- for stdout, e.g. CI step summary)");
  sub.add_option("--csv", o.csv_path, "CSV, one row per result, units in column names");
  sub.add_option("--junit", o.junit_path, "JUnit XML, one testcase per result row");
  sub.add_option("--baseline", o.baseline_path, "JSON Lines of a baseline run to compare with");
  sub.add_option("--tolerance", f.tolerance, "Allowed slowdown beyond noise (default 10%)");
  sub.add_option("--min-busbw", f.min_busbw, "Minimum busbw per size: SIZE=GBPS,... (1M=5,64M=20)");
  sub.add_option("--max-lat", f.max_lat, "Maximum p50 latency per size: SIZE=US,... (8=50)");
}

core::Status parseReportFlags(ReportFlags& f) {
  return reports::parseCriteria(f.tolerance, f.min_busbw, f.max_lat, f.options.criteria);
}

core::Result<double> parseDurationOption(const std::string& option, const std::string& text) {
  std::string lower = text;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == "inf" || lower == "infinity") return kNoDeadlineSeconds;
  auto s = core::parseDurationSeconds(text);
  if (!s) return s.takeStatus().prepend(option);
  // parseDurationSeconds refuses these too; a NaN or negative deadline must never get through.
  if (!(*s > 0))
    return core::Status(core::Code::kInvalidArgument,
                        fmt::format("{}: duration '{}' must be positive", option, text));
  return std::min(*s, kNoDeadlineSeconds);
}

int usageError(const std::string& message) {
  std::fprintf(stderr, "ccscope: error: %s\n", message.c_str());
  return kExitUsage;
}

}  // namespace ccscope::app
