// The congestion phase of `ccscope burnin`, after GPCNeT: one victim pair (rank 0 and a rank on
// another host) measures latency (p99 of 8-byte round trips) and one-way bandwidth alone, then
// again while every other rank runs all-to-all traffic (pairwise exchanges, round after round
// of the circle method). The impact factor is loaded / alone for p99 and alone / loaded for
// bandwidth, per repeat; the summary gives their median and spread.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "app/burnin_phases.h"
#include "burnin/pair_measure.h"
#include "burnin/pairing.h"
#include "core/deadline.h"
#include "core/robust.h"

namespace ccscope::app {

using burnin::Pair;
using burnin::Round;
using core::Deadline;
using core::Status;
using nlohmann::json;

namespace {

constexpr int kBurst = 4;  // aggressor messages each way between two looks at the stop word

struct Roles {
  int victim_a = 0, victim_b = 1;
  std::vector<int> aggressors;
  std::vector<Round> rounds;  // aggressor pairs, in ranks
};

Roles rolesFor(const std::vector<std::string>& hosts) {
  Roles r;
  const int n = static_cast<int>(hosts.size());
  for (int i = 1; i < n; ++i)
    if (hosts[i] != hosts[0]) {
      r.victim_b = i;
      break;
    }
  for (int i = 0; i < n; ++i)
    if (i != r.victim_a && i != r.victim_b) r.aggressors.push_back(i);
  r.rounds = burnin::circleRounds(static_cast<int>(r.aggressors.size()));
  for (Round& round : r.rounds)
    for (Pair& p : round) p = {r.aggressors[p.first], r.aggressors[p.second]};
  return r;
}

// Aggressors: exchanges with this step's partner until the lowest aggressor, looking before
// every step, finds the victims done and says stop (one word per step, so all stop together).
Status aggress(const BurninContext& x, const Roles& roles, int rep) {
  const int self = x.c.rank();
  const bool leader = self == roles.aggressors.front();
  const double timeout = x.profile.timeout_s;
  for (int step = 0;; ++step) {
    const std::string key = fmt::format("burnin/cong/{}/go/{}", rep, step);
    if (leader) {
      CCSCOPE_ASSIGN_OR_RETURN(int64_t done, x.c.add(fmt::format("burnin/cong/{}/done", rep), 0,
                                                     Deadline::afterSeconds(timeout)));
      CCSCOPE_RETURN_IF_ERROR(x.c.put(key, done > 0 ? "0" : "1"));
    }
    CCSCOPE_ASSIGN_OR_RETURN(std::string go, x.c.get(key, Deadline::afterSeconds(4 * timeout)));
    if (go != "1") return Status::ok();
    for (const Pair& p : roles.rounds[step % roles.rounds.size()]) {
      if (p.first != self && p.second != self) continue;
      CCSCOPE_RETURN_IF_ERROR(burnin::exchange(x.t, x.buf, p.first == self ? p.second : p.first,
                                               x.profile.congestion.aggressor_bytes, kBurst,
                                               timeout));
    }
  }
}

json figures(const burnin::PairFigures& f) {
  return {{"p50_us", f.p50_us}, {"p99_us", f.p99_us}, {"bw_uni_gbps", f.uni_gbps}};
}

// One repeat: alone, then loaded. Rank 0 (victim a) returns the two figures.
Status repeat(const BurninContext& x, const Roles& roles, int rep, burnin::PairFigures& alone,
              burnin::PairFigures& loaded) {
  const burnin::CongestionSpec& s = x.profile.congestion;
  const burnin::PairSettings ps{s.bytes, s.lat_iters, s.test_s, x.profile.timeout_s};
  const int self = x.c.rank();
  const bool victim = self == roles.victim_a || self == roles.victim_b;
  const int peer = self == roles.victim_a ? roles.victim_b : roles.victim_a;
  auto barrier = [&](const char* what) {
    return x.c.barrier(fmt::format("burnin/cong/{}/{}", rep, what),
                       Deadline::afterSeconds(4 * x.profile.timeout_s));
  };
  CCSCOPE_RETURN_IF_ERROR(barrier("alone"));
  if (victim) {
    CCSCOPE_ASSIGN_OR_RETURN(alone,
                             burnin::measurePair(x.t, x.buf, peer, self == roles.victim_a, ps));
  }
  CCSCOPE_RETURN_IF_ERROR(barrier("loaded"));
  if (victim) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the aggressors ramp up
    CCSCOPE_ASSIGN_OR_RETURN(loaded,
                             burnin::measurePair(x.t, x.buf, peer, self == roles.victim_a, ps));
    if (self == roles.victim_a)
      CCSCOPE_RETURN_IF_ERROR(x.c.add(fmt::format("burnin/cong/{}/done", rep), 1,
                                      Deadline::afterSeconds(x.profile.timeout_s))
                                  .status());
  } else {
    CCSCOPE_RETURN_IF_ERROR(aggress(x, roles, rep));
  }
  return barrier("end");
}

std::string spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return fmt::format("median {:.2f}, {:.2f}..{:.2f}", core::median(v), v.front(), v.back());
}

// Rank 0: the repeats' median factors and spread, and a verdict against the profile's ceiling.
void summarize(const BurninContext& x, const std::vector<double>& lat_f,
               const std::vector<double>& bw_f, std::vector<BurninFinding>& out) {
  const burnin::CongestionSpec& s = x.profile.congestion;
  const double lat = core::median(lat_f), bw = core::median(bw_f);
  std::printf("# impact factor: p99 %s; bandwidth %s (over %d repeats)\n", spread(lat_f).c_str(),
              spread(bw_f).c_str(), s.repeats);
  std::string verdict = "pass";
  if (s.max_factor > 0 && std::max(lat, bw) > s.max_factor) {
    verdict = "degraded";
    out.push_back({"fabric", "congestion", "", verdict, "congestion",
                   fmt::format("impact factor p99 {:.2f}, bandwidth {:.2f}: above {:.2f}", lat, bw,
                               s.max_factor),
                   -1});
    std::printf("DEGRADED fabric: %s\n", out.back().why.c_str());
  }
  x.record({{"type", "congestion_summary"},
            {"p99_factor", lat},
            {"bw_factor", bw},
            {"p99_factors", lat_f},
            {"bw_factors", bw_f},
            {"verdict", verdict},
            {"p99_spread", spread(lat_f)},
            {"bw_spread", spread(bw_f)}});
  std::fflush(stdout);
}

}  // namespace

Status runCongestion(const BurninContext& x, std::vector<BurninFinding>& out) {
  const burnin::CongestionSpec& s = x.profile.congestion;
  if (x.c.size() < 4) {
    if (x.root()) {
      std::printf("#\n# congestion: needs 4 ranks (2 victims, 2 aggressors); not run\n");
      x.record({{"type", "congestion_summary"}, {"note", "needs 4 ranks; not run"}});
    }
    return Status::ok();
  }
  const Roles roles = rolesFor(x.hosts);
  if (x.root())
    std::printf(
        "#\n# congestion: victims rank %d (%s) and rank %d (%s), %zu aggressors, %d "
        "repeats\n# %6s %10s %10s %8s %10s %10s %8s\n",
        roles.victim_a, x.hosts[roles.victim_a].c_str(), roles.victim_b,
        x.hosts[roles.victim_b].c_str(), roles.aggressors.size(), s.repeats, "repeat", "p99 alone",
        "loaded", "factor", "GB/s alone", "loaded", "factor");
  std::vector<double> lat_f, bw_f;
  for (int rep = 0; rep < s.repeats; ++rep) {
    burnin::PairFigures alone, loaded;
    CCSCOPE_RETURN_IF_ERROR(
        repeat(x, roles, rep, alone, loaded).prepend(fmt::format("congestion repeat {}", rep)));
    if (!x.root()) continue;
    lat_f.push_back(alone.p99_us > 0 ? loaded.p99_us / alone.p99_us : 0);
    bw_f.push_back(loaded.uni_gbps > 0 ? alone.uni_gbps / loaded.uni_gbps : 0);
    x.record({{"type", "congestion"},
              {"repeat", rep},
              {"victim_a", x.hosts[roles.victim_a]},
              {"victim_b", x.hosts[roles.victim_b]},
              {"aggressors", roles.aggressors.size()},
              {"alone", figures(alone)},
              {"loaded", figures(loaded)},
              {"p99_factor", lat_f.back()},
              {"bw_factor", bw_f.back()}});
    std::printf("  %6d %10.1f %10.1f %8.2f %10.3f %10.3f %8.2f\n", rep, alone.p99_us, loaded.p99_us,
                lat_f.back(), alone.uni_gbps, loaded.uni_gbps, bw_f.back());
    std::fflush(stdout);
  }
  if (x.root()) summarize(x, lat_f, bw_f, out);
  return Status::ok();
}

}  // namespace ccscope::app
