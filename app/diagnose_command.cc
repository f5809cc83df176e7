#include "app/diagnose_command.h"

#include <cstdlib>
#include <cstring>
#include <memory>

#include "app/cli_options.h"
#include "app/diagnose_job.h"
#include "app/job_launch.h"
#include "diagnostics/live/library_init.h"

namespace ccscope::app {

namespace {

struct RawOptions {
  DiagnoseOptions d;
  std::string timeout = "5s", max_clock_skew = "2s";
  LaunchFlags launch;
  std::vector<std::string> argv;
  std::string init_child;  // hidden: run as the library probe's helper
};

int run(RawOptions& raw) {
  if (!raw.init_child.empty()) return diagnostics::runLibraryInitChild(raw.init_child);
  auto t = parseDurationOption("--timeout", raw.timeout);
  if (!t) return usageError(t.status().message());
  raw.d.probe.timeout_s = *t;
  auto skew = parseDurationOption("--max-clock-skew", raw.max_clock_skew);
  if (!skew) return usageError(skew.status().message());
  raw.d.probe.max_clock_skew_s = *skew;
  // Test-only: CCSCOPE_TESTONLY_DIAG_SKIP_COLLECTIVE=RANK makes that rank skip the allreduce.
  if (const char* v = std::getenv("CCSCOPE_TESTONLY_DIAG_SKIP_COLLECTIVE"))
    raw.d.probe.testonly_skip_collective_rank = std::atoi(v);
  // Test-only: CCSCOPE_TESTONLY_CLOCK_OFFSET=RANK:SECONDS makes that rank report a shifted clock.
  if (const char* v = std::getenv("CCSCOPE_TESTONLY_CLOCK_OFFSET"); v && std::strchr(v, ':')) {
    raw.d.probe.testonly_clock_offset_rank = std::atoi(v);
    raw.d.probe.testonly_clock_offset_s = std::atof(std::strchr(v, ':') + 1);
  }
  auto single_copy_from = shmSingleCopyFromEnv();
  if (!single_copy_from) return usageError(single_copy_from.status().message());
  raw.d.shm_single_copy_from = *single_copy_from;
  raw.d.store_bind = raw.launch.store_bind;
  // The launcher reports a rank cut by its deadline as a hang (3); a probe fault is 1.
  return launchOrRun(toLaunchOptions(raw.launch, *t * 4), raw.argv,
                     [&](const launch::LaunchInfo& info) { return runDiagnoseRank(raw.d, info); });
}

}  // namespace

Command addDiagnoseCommand(CLI::App& root, const std::vector<std::string>& argv) {
  auto raw = std::make_shared<RawOptions>();
  raw->argv = argv;
  CLI::App* d = root.add_subcommand(
      "diagnose", "Probe the job layer by layer and name the first failing layer");
  addLaunchOptions(*d, raw->launch);
  d->add_option("--timeout", raw->timeout, "Deadline of each probe (5s)");
  d->add_option("--max-clock-skew", raw->max_clock_skew,
                "Largest wall-clock difference between ranks that passes (2s)");
  d->add_option("--ifname", raw->d.probe.ifname, "Network interface the job uses");
  d->add_option("--json", raw->d.json_path, "Write the diagnosis as JSON to this file");
  // The library probe's helper process (ccscope diagnose --library-init-child ucx|nccl:GPU).
  d->add_option("--library-init-child", raw->init_child)->group("");
  return {d, [raw] { return run(*raw); }};
}

}  // namespace ccscope::app
