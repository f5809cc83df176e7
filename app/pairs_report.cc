#include "app/pairs_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/robust.h"

namespace ccscope::app {

using burnin::Finding;
using burnin::Pair;
using burnin::Round;
using nlohmann::json;

// A round trip of up to 100 us (kernel TCP between hosts; RDMA is ~30x less), two timed
// bandwidth tests, their one-message calibrations and the round's barrier.
double pairsEstimateSeconds(const PairsOptions& o, size_t rounds, std::string* how) {
  const double trips = o.pair.lat_iters * 1.1;
  const double per_round = 2 * o.pair.seconds + trips * 100e-6 + 0.05;
  if (how)
    *how = fmt::format(
        "{} rounds x about {:.2f} s: two bandwidth tests of {} s, {:.0f} round trips at up to "
        "100 us, calibration and a barrier",
        rounds, per_round, o.pair.seconds, trips);
  return static_cast<double>(rounds) * per_round;
}

void PairsBook::start(const PairsOptions& o, const std::vector<std::string>& hosts,
                      const std::vector<Round>& rounds) {
  hosts_ = hosts;
  rails_ = o.scope == burnin::Scope::kRails;
  const std::vector<std::string> labels = burnin::unitLabels(o.scope, hosts);
  std::set<int> in_plan;
  for (const Round& r : rounds)
    for (const Pair& p : r) in_plan.insert({p.first, p.second});
  unit_of_.assign(hosts.size(), -1);
  local_index_.assign(hosts.size(), 0);
  std::map<std::string, int> seen_host, index;
  for (int r = 0; r < static_cast<int>(hosts.size()); ++r) {
    local_index_[r] = seen_host[hosts[r]]++;
    if (!in_plan.count(r)) continue;
    auto [it, fresh] = index.emplace(labels[r], static_cast<int>(units_.size()));
    if (fresh) {
      units_.push_back(labels[r]);
      rep_.push_back(r);
    }
    unit_of_[r] = it->second;
  }
}

json PairsBook::runRecord(const PairsOptions& o, const std::vector<Round>& rounds) const {
  size_t pairs = 0;
  for (const Round& r : rounds) pairs += r.size();
  std::string how;
  const double est = pairsEstimateSeconds(o, rounds.size(), &how);
  return {{"type", "pairs_run"},
          {"version", CCSCOPE_VERSION},
          {"scope", burnin::scopeName(o.scope)},
          {"transport", o.transport},
          {"ranks", hosts_.size()},
          {"units", units_},
          {"rounds", rounds.size()},
          {"pairs", pairs},
          {"bytes", o.pair.bytes},
          {"lat_iters", o.pair.lat_iters},
          {"seconds_per_test", o.pair.seconds},
          {"estimate_s", est},
          {"estimate", how}};
}

json PairsBook::add(int round, bool retest, const Pair& p, const json& figures) {
  const int ua = unit_of_[p.first], ub = unit_of_[p.second];
  json rec = {{"type", "pair"},
              {"round", round},
              {"retest", retest},
              {"rank_a", p.first},
              {"rank_b", p.second},
              {"unit_a", units_[ua]},
              {"unit_b", units_[ub]},
              {"host_a", hosts_[p.first]},
              {"host_b", hosts_[p.second]}};
  if (figures.is_object()) rec.update(figures);
  const double bw = rec.value("bw_uni_gbps", 0.0), p99 = rec.value("p99_us", 0.0);
  // Retests stay out of the matrix: measured with few pairs at a time, they are faster than
  // the rounds they would be compared with.
  const bool control = retest && controls_.count(std::minmax(p.first, p.second));
  (control ? control_bw_ : retest ? retest_bw_ : bw_).push_back({ua, ub, bw});
  (control ? control_lat_ : retest ? retest_lat_ : lat_).push_back({ua, ub, p99 > 0 ? 1 / p99 : 0});
  return rec;
}

double PairsBook::clearedByRetest(const Finding& f, bool latency, const PairsOptions& o) const {
  std::vector<double> figures, controls;
  for (const burnin::PairValue& v : latency ? retest_lat_ : retest_bw_) {
    const bool of_it =
        f.host ? (v.a == f.a || v.b == f.a) : std::minmax(v.a, v.b) == std::minmax(f.a, f.b);
    if (of_it && v.value > 0) figures.push_back(v.value);
  }
  for (const burnin::PairValue& v : latency ? control_lat_ : control_bw_)
    if (v.value > 0) controls.push_back(v.value);
  // Without a control, the rounds' typical pair is no fair reference (retests run faster): the
  // finding stands as judged.
  if (figures.empty() || controls.empty()) return 0;
  const double share = core::median(figures) / core::median(controls);
  return share >= (latency ? o.latency : o.bandwidth).degraded ? share : 0;
}

burnin::MatrixFit PairsBook::fit(bool latency, const PairsOptions& o) const {
  return burnin::analyzeMatrix(static_cast<int>(units_.size()), latency ? lat_ : bw_,
                               latency ? o.latency : o.bandwidth);
}

// Rails are measured within a rail only.
bool PairsBook::partners(int unit_a, int unit_b) const {
  return unit_a != unit_b && (!rails_ || local_index_[rep_[unit_a]] == local_index_[rep_[unit_b]]);
}

std::vector<Pair> PairsBook::retestPairs(const PairsOptions& o) {
  std::vector<Finding> suspects;
  std::set<int> flagged;
  for (bool latency : {false, true}) {
    if (latency && !o.latency_unjudged.empty()) continue;
    for (const Finding& f : fit(latency, o).findings) {
      suspects.push_back(f);
      flagged.insert(f.a);
      if (!f.host) flagged.insert(f.b);
    }
  }
  std::set<Pair> out;
  auto plan = [&](int ra, int rb) {
    const Pair p = std::minmax(ra, rb);
    out.insert(p);
  };
  for (const Finding& f : suspects) {
    if (!f.host) {
      plan(rep_[f.a], rep_[f.b]);
      continue;
    }
    int found = 0;
    for (int u = 0; u < static_cast<int>(units_.size()) && found < 2; ++u)
      if (!flagged.count(u) && partners(f.a, u)) {
        plan(rep_[f.a], rep_[u]);
        ++found;
      }
  }
  if (!out.empty()) planControls(flagged, out);
  return {out.begin(), out.end()};
}

// Up to two pairs of healthy units, preferring units no retest uses (those run in the retests'
// rounds); a retest partner may serve where too few units are left.
void PairsBook::planControls(const std::set<int>& flagged, std::set<Pair>& out) {
  std::set<int> busy;
  for (const Pair& p : out) busy.insert({p.first, p.second});
  const int units = static_cast<int>(units_.size());
  int added = 0;
  for (bool allow_busy : {false, true})
    for (int u = 0; u < units && added < 2; ++u)
      for (int v = u + 1; v < units && added < 2; ++v) {
        const int ru = rep_[u], rv = rep_[v];
        const Pair p = std::minmax(ru, rv);
        if (flagged.count(u) || flagged.count(v) || !partners(u, v) || out.count(p) ||
            (!allow_busy && (busy.count(ru) || busy.count(rv))))
          continue;
        out.insert(p);
        controls_.insert(p);
        busy.insert({ru, rv});
        ++added;
      }
}

namespace {

std::string describe(const Finding& f, const std::vector<std::string>& units, bool latency) {
  const std::string what = f.host ? fmt::format("host {}", units[f.a])
                                  : fmt::format("link {} <-> {}", units[f.a], units[f.b]);
  const std::string how =
      latency ? fmt::format("p99 latency {:.1f}x what its partners predict", 1 / f.share)
              : fmt::format("bandwidth {:.3g}x what its partners predict", f.share);
  return fmt::format("{} {}: {} ({:.1f} robust deviations out)",
                     f.verdict == burnin::Verdict::kFailed ? "FAILED  " : "DEGRADED", what, how,
                     f.z);
}

json verdictJson(const Finding& f, const std::vector<std::string>& units, bool latency) {
  json v = {{"type", "pair_verdict"},
            {"metric", latency ? "p99" : "bandwidth"},
            {"kind", f.host ? "host" : "link"},
            {"unit_a", units[f.a]},
            {"share", f.share},
            {"z", f.z},
            {"verdict", burnin::verdictName(f.verdict)}};
  if (!f.host) v["unit_b"] = units[f.b];
  return v;
}

}  // namespace

json PairsBook::finish(const PairsOptions& o, reports::JsonLinesWriter* out) const {
  const burnin::MatrixFit bw = fit(false, o), lat = fit(true, o);
  std::printf("#\n# verdicts: typical pair %.3f GB/s one way, p99 %.1f us\n", bw.typical,
              lat.typical > 0 ? 1 / lat.typical : 0.0);
  if (!bw.note.empty()) std::printf("# %s\n", bw.note.c_str());
  json hosts = json::object(), links = json::array(), host_verdicts = json::array();
  for (const std::string& u : units_) hosts[u] = "pass";
  int cleared = 0;
  const bool judge_latency = o.latency_unjudged.empty();
  if (!judge_latency) std::printf("# p99 not judged: %s\n", o.latency_unjudged.c_str());
  for (bool latency : {false, true})
    for (const Finding& f : (latency ? lat : bw).findings) {
      if (latency && !judge_latency) {
        std::printf("# not judged: %s\n", describe(f, units_, latency).c_str());
        ++cleared;
        continue;
      }
      if (double share = clearedByRetest(f, latency, o); share > 0) {
        std::printf("# not confirmed: %s; its retests measured %.2fx the healthy pairs alongside\n",
                    describe(f, units_, latency).c_str(), latency ? 1 / share : share);
        ++cleared;
        continue;
      }
      std::printf("%s\n", describe(f, units_, latency).c_str());
      json v = verdictJson(f, units_, latency);
      if (out) out->write(v);
      if (f.host) {
        std::string& h = hosts[units_[f.a]].get_ref<std::string&>();
        if (h != "failed") h = burnin::verdictName(f.verdict);
        host_verdicts.push_back(v);
      } else {
        links.push_back(v);
      }
    }
  if (bw.findings.size() + lat.findings.size() == static_cast<size_t>(cleared))
    std::printf("# no host or link below the population%s\n",
                judge_latency ? "" : " (bandwidth; p99 not judged)");
  json summary = {{"type", "pairs_summary"},
                  {"typical_bw_gbps", bw.typical},
                  {"typical_p99_us", lat.typical > 0 ? 1 / lat.typical : 0.0},
                  {"bw_host_spread", bw.host_spread},
                  {"bw_link_spread", bw.link_spread},
                  {"hosts", hosts},
                  {"links", links},
                  {"host_verdicts", host_verdicts},
                  {"note", bw.note}};
  if (!judge_latency) summary["p99_unjudged"] = o.latency_unjudged;
  if (out) out->write(summary);
  std::fflush(stdout);
  return summary;
}

std::string latencyUnjudged(int ranks, int cpus) {
  if (cpus <= 0 || ranks <= cpus) return "";
  return fmt::format(
      "{} ranks share the {} cores of one machine, so a p99 measures the scheduler, not the link",
      ranks, cpus);
}

int pairsVerdictCount(const json& summary) {
  int n = 0;
  if (auto links = summary.find("links"); links != summary.end())
    n += static_cast<int>(links->size());
  if (auto hosts = summary.find("hosts"); hosts != summary.end() && hosts->is_object())
    for (auto it = hosts->begin(); it != hosts->end(); ++it) n += *it != "pass" ? 1 : 0;
  return n;
}

void printHeader(const json& run) {
  std::printf("# ccscope %s pairs: scope %s over %s, %zu units, %d rounds of disjoint pairs\n",
              run["version"].get<std::string>().c_str(), run["scope"].get<std::string>().c_str(),
              run["transport"].get<std::string>().c_str(), run["units"].size(),
              run["rounds"].get<int>());
  std::printf("# estimate: %.0f s (%s)\n", run["estimate_s"].get<double>(),
              run["estimate"].get<std::string>().c_str());
  std::printf(
      "# bandwidth at %s per message in GB/s (10^9 B/s); latency: half round trips of 8 B "
      "in us, %d of them\n",
      fmt::format("{} B", run["bytes"].get<size_t>()).c_str(), run["lat_iters"].get<int>());
  std::printf("#%5s %-24s %-24s %9s %9s %9s %9s %9s %9s\n", "round", "a", "b", "uni", "bidir",
              "p50", "p99", "p99.9", "max");
  std::fflush(stdout);
}

void printPairRow(const json& p) {
  std::printf("%6d%s %-24s %-24s %9.3f %9.3f %9.1f %9.1f %9.1f %9.1f\n", p["round"].get<int>(),
              p["retest"].get<bool>() ? "r" : " ", p["unit_a"].get<std::string>().c_str(),
              p["unit_b"].get<std::string>().c_str(), p.value("bw_uni_gbps", 0.0),
              p.value("bw_bidir_gbps", 0.0), p.value("p50_us", 0.0), p.value("p99_us", 0.0),
              p.value("p999_us", 0.0), p.value("max_us", 0.0));
  std::fflush(stdout);
}

}  // namespace ccscope::app
