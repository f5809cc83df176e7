#include "app/diagnose_command.h"

#include <memory>

#include "app/diagnose_job.h"
#include "app/job_launch.h"
#include "core/units.h"

namespace ccscope::app {

namespace {

struct RawOptions {
  DiagnoseOptions d;
  std::string timeout = "5s", store;
  int np = 0, store_port = -1;
  std::vector<std::string> argv;
};

int run(RawOptions& raw) {
  auto t = core::parseDurationSeconds(raw.timeout);
  if (!t) {
    std::fprintf(stderr, "ccscope: error: %s\n", t.status().message().c_str());
    return kExitUsage;
  }
  raw.d.probe.timeout_s = *t;
  LaunchOptions lo{raw.np, *t * 4, raw.store, raw.d.store_bind, raw.store_port};
  int code = launchOrRun(lo, raw.argv, [&](const launch::LaunchInfo& info) {
    return runDiagnoseRank(raw.d, info);
  });
  // The launcher reports a rank cut by its deadline as a hang (3); a probe fault is 1.
  return code;
}

}  // namespace

Command addDiagnoseCommand(CLI::App& root, const std::vector<std::string>& argv) {
  auto raw = std::make_shared<RawOptions>();
  raw->argv = argv;
  CLI::App* d = root.add_subcommand("diagnose", "Probe the job layer by layer and name the first failing layer");
  d->add_option("--np", raw->np, "Local ranks to start when no launcher is around")->check(CLI::Range(1, 4096));
  d->add_option("--timeout", raw->timeout, "Deadline of each probe (5s)");
  d->add_option("--ifname", raw->d.probe.ifname, "Network interface the job uses");
  d->add_option("--json", raw->d.json_path, "Write the diagnosis as JSON to this file");
  d->add_option("--store", raw->store, "Rendezvous store HOST:PORT (external launchers)");
  d->add_option("--store-port", raw->store_port, "Port of the rendezvous store");
  d->add_option("--store-bind", raw->d.store_bind, "Address the rendezvous store binds to");
  return {d, [raw] { return run(*raw); }};
}

}  // namespace ccscope::app
