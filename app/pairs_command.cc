#include "app/pairs_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "app/cli_options.h"
#include "app/job_launch.h"
#include "app/pairs_job.h"
#include "app/pairs_report.h"
#include "core/units.h"
#include "transports/transport.h"

namespace ccscope::app {

namespace {

struct PairsRawOptions {
  PairsOptions p;
  std::string scope = "hosts", size = "1M", timeout = "30s", seconds = "200ms";
  double degraded = 0.7, failed = 0.3;
  bool no_retest = false;
  int estimate_hosts = 0;
  LaunchFlags launch;
  std::vector<std::string> argv;
};

// The plan and run time for `hosts` hosts of one rank each, before anyone books them.
int printEstimate(const PairsOptions& o, int hosts) {
  std::vector<std::string> labels;
  labels.reserve(hosts);
  for (int h = 0; h < hosts; ++h) labels.push_back(fmt::format("host{}", h));
  const std::vector<burnin::Round> rounds = burnin::planRounds(o.scope, labels, o.rounds_k, o.seed);
  size_t pairs = 0;
  for (const burnin::Round& r : rounds) pairs += r.size();
  std::string how;
  const double s = pairsEstimateSeconds(o, rounds.size(), &how);
  std::printf("%d hosts, scope %s: %zu rounds, %zu pairs; estimate %.0f s (%.1f min): %s\n", hosts,
              burnin::scopeName(o.scope), rounds.size(), pairs, s, s / 60, how.c_str());
  return kExitOk;
}

int runPairs(PairsRawOptions& raw) {
  auto scope = burnin::parseScope(raw.scope);
  if (!scope) return usageError(scope.status().message());
  raw.p.scope = *scope;
  auto t = parseDurationOption("--timeout", raw.timeout);
  if (!t) return usageError(t.status().message());
  raw.p.pair.timeout_s = *t;
  auto secs = parseDurationOption("--test-time", raw.seconds);
  if (!secs) return usageError(secs.status().message());
  raw.p.pair.seconds = *secs;
  auto bytes = core::parseSize(raw.size);
  if (!bytes || *bytes < 8)
    return usageError(
        fmt::format("--size takes a message size of at least 8 B, not '{}'", raw.size));
  raw.p.pair.bytes = *bytes;
  if (!(raw.failed > 0 && raw.failed < raw.degraded && raw.degraded < 1))
    return usageError(fmt::format("--failed {} and --degraded {}: need 0 < failed < degraded < 1",
                                  raw.failed, raw.degraded));
  raw.p.bandwidth.degraded = raw.degraded;
  raw.p.bandwidth.failed = raw.failed;
  raw.p.retest = !raw.no_retest;
  if (raw.p.transport == "mpi" || !transports::isTransport(raw.p.transport))
    return usageError(fmt::format("--transport {}: pairs runs over {}", raw.p.transport,
                                  transports::transportNames()));
  if (transports::movesDeviceMemoryOnly(raw.p.transport))
    return usageError(
        fmt::format("--transport {0}: pairs measures host buffers, which {0} does "
                    "not move",
                    raw.p.transport));
  if (core::Status s = transports::transportUsable(raw.p.transport); !s.isOk()) {
    std::fprintf(stderr, "ccscope: error: --transport %s: %s\n", raw.p.transport.c_str(),
                 s.message().c_str());
    return kExitMissing;
  }
  raw.p.store_bind = raw.launch.store_bind;
  if (raw.estimate_hosts > 0) return printEstimate(raw.p, raw.estimate_hosts);
  return launchOrRun(toLaunchOptions(raw.launch, *t * 4), raw.argv,
                     [&](const launch::LaunchInfo& info) { return runPairsRank(raw.p, info); });
}

}  // namespace

Command addPairsCommand(CLI::App& root, const std::vector<std::string>& argv) {
  auto raw = std::make_shared<PairsRawOptions>();
  raw->argv = argv;
  CLI::App* c = root.add_subcommand(
      "pairs", "Measure every link in rounds of disjoint pairs and name slow hosts and links");
  addLaunchOptions(*c, raw->launch);
  c->add_option("--transport", raw->p.transport, "tcp (default), shm, ucx or verbs");
  c->add_option("--scope", raw->scope,
                "hosts (default: one rank per host), ranks (every pair) or rails (local rank i "
                "with local rank i elsewhere)");
  c->add_option("--rounds", raw->p.rounds_k,
                "Random rounds of disjoint pairs instead of all of them (large jobs)")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--seed", raw->p.seed, "Seed of --rounds' pairings (1)");
  c->add_option("--size", raw->size, "Bandwidth message size (1M)");
  c->add_option("--test-time", raw->seconds, "Time per bandwidth test (200ms)");
  c->add_option("--lat-iters", raw->p.pair.lat_iters, "Round trips per pair (2000)")
      ->check(CLI::Range(10, 10000000));
  c->add_option("--timeout", raw->timeout, "Deadline of every operation (30s)");
  c->add_option("--degraded", raw->degraded,
                "A host or link below this share of what the matrix predicts is degraded (0.7)");
  c->add_option("--failed", raw->failed, "... below this share, failed (0.3)");
  c->add_flag("--no-retest", raw->no_retest, "Judge without retesting the suspects");
  c->add_option("--estimate", raw->estimate_hosts,
                "Print the plan and run time for this many hosts and exit (runs nothing)")
      ->check(CLI::Range(2, 1000000));
  c->add_option("--json", raw->p.json_path, "Write pair records as JSON Lines to this file");
  c->add_option("--ifname", raw->p.ifname, "tcp: network interface to use");
  return {c, [raw] { return runPairs(*raw); }};
}

}  // namespace ccscope::app
