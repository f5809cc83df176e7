// Options more than one subcommand takes, declared once so that their names, help texts and
// defaults agree: how a job finds its ranks (bench, diagnose) and which reports to write and
// judge by (bench, report).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "app/job_launch.h"
#include "core/status.h"
#include "reports/report_set.h"

namespace ccscope::app {

struct LaunchFlags {
  int np = 0;
  std::string store, store_bind;
  int store_port = -1;
};

// --np, --store, --store-port, --store-bind.
void addLaunchOptions(CLI::App& sub, LaunchFlags& f);
LaunchOptions toLaunchOptions(const LaunchFlags& f, double timeout_s);

struct ReportFlags {
  reports::ReportOptions options;
  std::string tolerance = "10%", min_busbw, max_lat;
};

// --html, --md, --csv, --junit, --baseline, --tolerance, --min-busbw, --max-lat.
void addReportOptions(CLI::App& sub, ReportFlags& f);
// Parses the threshold texts into f.options.criteria; an error is a usage error.
core::Status parseReportFlags(ReportFlags& f);

// The longest duration an option passes on, in seconds (over three years): a longer one, or
// inf, means no deadline. Not more, so that code multiplying a timeout into int64 nanoseconds
// (the launcher's grace period, diagnose's phase waits, the clock-skew bound) cannot overflow.
inline constexpr double kNoDeadlineSeconds = 1e8;

// Every duration option (--timeout, --max-clock-skew) goes through here: "30s", "500ms", "2m",
// "inf". Zero, negative, NaN or unparsable is an error naming the option; longer than
// kNoDeadlineSeconds is kNoDeadlineSeconds.
core::Result<double> parseDurationOption(const std::string& option, const std::string& text);

// Prints "ccscope: error: MESSAGE" and returns the usage exit code.
int usageError(const std::string& message);

}  // namespace ccscope::app
