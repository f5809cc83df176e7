#include "app/burnin_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "app/burnin_job.h"
#include "app/cli_options.h"
#include "app/job_launch.h"
#include "collectives/algorithms.h"
#include "reports/report_set.h"
#include "transports/transport.h"

namespace ccscope::app {

namespace {

struct RawOptions {
  BurninOptions o;
  std::string profile_path, transport, ifname;
  LaunchFlags launch;
};

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
  if (p.transport == "cuda-ipc")
    return usageError(
        "transport cuda-ipc: burnin measures host buffers, which cuda-ipc does not move");
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
  return {c, [raw] { return run(*raw); }};
}

}  // namespace ccscope::app
