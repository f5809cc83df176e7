#include "app/burnin_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "app/burnin_job.h"
#include "app/cli_options.h"
#include "app/job_launch.h"
#include "app/pairs_report.h"
#include "burnin/pairing.h"
#include "collectives/algorithms.h"
#include "core/units.h"
#include "reports/report_set.h"
#include "transports/transport.h"

namespace ccscope::app {

namespace {

struct RawOptions {
  BurninOptions o;
  std::string profile_path, transport, ifname;
  int estimate_hosts = 0;
  LaunchFlags launch;
};

// The profile's phases for `hosts` hosts of one rank each, before anyone books them: the pairs
// as `ccscope pairs --estimate` reckons them, the soak's duration, the congestion repeats as
// round trips and bandwidth tests; sweeps depend on the fabric and are not estimated.
int printEstimate(const burnin::Profile& p, int hosts) {
  std::vector<std::string> labels;
  labels.reserve(hosts);
  for (int h = 0; h < hosts; ++h) labels.push_back(fmt::format("host{}", h));
  double total = 0;
  std::printf("profile '%s' on %d hosts:\n", p.name.c_str(), hosts);
  if (p.pairs.enabled) {
    PairsOptions po;
    po.pair = {p.pairs.bytes, p.pairs.lat_iters, p.pairs.test_s, p.timeout_s};
    const size_t rounds =
        burnin::planRounds(p.pairs.scope, labels, p.pairs.rounds, p.pairs.seed).size();
    std::string how;
    const double s = pairsEstimateSeconds(po, rounds, &how);
    total += s;
    std::printf("  pairs       %8.0f s  %s (and retests of suspects)\n", s, how.c_str());
  }
  for (const burnin::SweepSpec& w : p.sweeps)
    std::printf("  sweep       %8s    %s %s %s..%s: not estimated (it depends on the fabric)\n",
                "?", w.collective.c_str(), w.algo.c_str(), core::formatBytes(w.min_bytes).c_str(),
                core::formatBytes(w.max_bytes).c_str());
  if (p.soak.enabled) {
    total += p.soak.duration_s;
    std::printf(
        "  soak        %8.0f s  its duration (a sample every %.0f s, or back to back "
        "when one takes longer)\n",
        p.soak.duration_s, p.soak.interval_s);
  }
  if (p.congestion.enabled) {
    const double one = 2 * (p.congestion.lat_iters * 1.1 * 100e-6 + 2 * p.congestion.test_s + 0.1);
    total += one * p.congestion.repeats;
    std::printf(
        "  congestion  %8.0f s  %d repeats x (alone and loaded: %d round trips at up to "
        "100 us, two bandwidth tests of %.2f s)\n",
        one * p.congestion.repeats, p.congestion.repeats, p.congestion.lat_iters,
        p.congestion.test_s);
  }
  std::printf("  total       %8.0f s  (%.1f min)%s\n", total, total / 60,
              p.sweeps.empty() ? "" : " and the sweeps");
  return kExitOk;
}

bool knownAlgorithm(collectives::Collective c, const std::string& algo) {
  return algo == "auto" || collectives::findAlgorithm(c, algo) != nullptr;
}

// What would only fail once the ranks run: collectives, algorithms, criteria and baselines.
core::Status checkProfile(const burnin::Profile& p) {
  using core::Code;
  using core::Status;
  auto bad = [&](const std::string& why) {
    return Status(Code::kInvalidArgument, fmt::format("profile {}: {}", p.source, why));
  };
  for (size_t i = 0; i < p.sweeps.size(); ++i) {
    const burnin::SweepSpec& w = p.sweeps[i];
    auto c = collectives::parseCollective(w.collective);
    if (!c) return bad(fmt::format("sweep[{}].collective: {}", i, c.status().message()));
    if (!knownAlgorithm(*c, w.algo))
      return bad(fmt::format("sweep[{}].algo: '{}' is not an algorithm of {} ({})", i, w.algo,
                             w.collective, fmt::join(collectives::algorithmNames(*c), ", ")));
    reports::Criteria criteria;
    if (Status s = reports::parseCriteria(w.tolerance, w.min_busbw, w.max_lat, criteria); !s.isOk())
      return bad(fmt::format("sweep[{}]: {}", i, s.message()));
    if (!w.baseline.empty() && !std::filesystem::is_regular_file(w.baseline))
      return bad(fmt::format("sweep[{}].baseline: {} cannot be read", i, w.baseline));
  }
  for (const std::string& name : p.soak.collectives) {
    auto c = collectives::parseCollective(name);
    if (!c) return bad(fmt::format("soak.collectives: {}", c.status().message()));
    if (*c == collectives::Collective::kAlltoallv || *c == collectives::Collective::kSendrecv)
      return bad(
          fmt::format("soak.collectives: {} is not sampled (it needs a plan or a peer)", name));
    if (!knownAlgorithm(*c, p.soak.collective_algo))
      return bad(fmt::format("soak.collective_algo: '{}' is not an algorithm of {}",
                             p.soak.collective_algo, name));
  }
  return Status::ok();
}

int run(RawOptions& raw) {
  auto profile = burnin::loadProfile(raw.profile_path);
  if (!profile) return usageError(profile.status().message());
  burnin::Profile& p = *profile;
  if (!raw.transport.empty()) p.transport = raw.transport;
  if (!raw.ifname.empty()) p.ifname = raw.ifname;
  if (p.transport == "mpi" || !transports::isTransport(p.transport))
    return usageError(fmt::format("transport {}: burnin runs over {}", p.transport,
                                  transports::transportNames()));
  if (transports::movesDeviceMemoryOnly(p.transport))
    return usageError(fmt::format(
        "transport {0}: burnin measures host buffers, which {0} does not move", p.transport));
  // The plan alone needs no baseline file, library or device.
  if (raw.estimate_hosts > 0) return printEstimate(p, raw.estimate_hosts);
  if (core::Status s = checkProfile(p); !s.isOk()) return usageError(s.message());
  if (core::Status s = transports::transportUsable(p.transport); !s.isOk()) {
    std::fprintf(stderr, "ccscope: error: transport %s: %s\n", p.transport.c_str(),
                 s.message().c_str());
    return kExitMissing;
  }
  raw.o.profile = std::move(p);
  raw.o.store_bind = raw.launch.store_bind;
  return launchOrRun(toLaunchOptions(raw.launch, raw.o.profile.timeout_s * 4), raw.o.argv,
                     [&](const launch::LaunchInfo& info) { return runBurninRank(raw.o, info); });
}

}  // namespace

Command addBurninCommand(CLI::App& root, const std::vector<std::string>& argv) {
  auto raw = std::make_shared<RawOptions>();
  raw->o.argv = argv;
  CLI::App* c = root.add_subcommand(
      "burnin",
      "Preflight, link matrix, collective sweeps, soak and congestion from a profile, with a "
      "verdict per host and per link");
  addLaunchOptions(*c, raw->launch);
  c->add_option("--profile", raw->profile_path, "The profile (TOML; deploy/profiles/)")->required();
  c->add_option("--json", raw->o.json_path, "Write every record as JSON Lines to this file");
  c->add_option("--transport", raw->transport, "Instead of the profile's transport");
  c->add_option("--ifname", raw->ifname, "Instead of the profile's interface (tcp)");
  c->add_option("--estimate", raw->estimate_hosts,
                "Print each phase's run time for this many hosts and exit (runs nothing)")
      ->check(CLI::Range(2, 1000000));
  return {c, [raw] { return run(*raw); }};
}

}  // namespace ccscope::app
