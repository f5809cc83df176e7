// The soak of `ccscope burnin`: every interval, each link of the plan measured as a pair (all
// of them, or each unit with the next: `links`) and each chosen collective timed; every sample
// streams as a `soak_sample` record as it is taken, so a soak killed half-way keeps them all.
// At the end, burnin/soak_analysis.h judges every series: links against each other (an event
// that moves them all is the fabric's), a drift past the profile's shares is a verdict with the
// time it started, and a link below the others all along is one too.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "app/burnin_phases.h"
#include "app/pairs_job.h"
#include "burnin/soak_analysis.h"
#include "core/deadline.h"

namespace ccscope::app {

using burnin::Pair;
using burnin::Round;
using core::Deadline;
using core::Status;
using nlohmann::json;

namespace {

constexpr int kCollectiveIters = 5;

struct SoakState {
  std::map<std::string, burnin::SoakSeries> series;  // rank 0
  int64_t t0_ns = core::nowNs();
  double elapsed() const { return static_cast<double>(core::nowNs() - t0_ns) / 1e9; }
  void add(const std::string& kind, const std::string& a, const std::string& b,
           const std::string& metric, int sample, double t, double value) {
    burnin::SoakSeries& s = series[kind + "|" + a + "|" + b + "|" + metric];
    s.kind = kind;
    s.unit_a = a;
    s.unit_b = b;
    s.metric = metric;
    s.sample.push_back(sample);
    s.points.push_back({t, value});
  }
};

// `iters` timed runs after one untimed; the slowest rank's time per run.
Status timeCollective(collectives::CollectiveBackend& b, collectives::Collective c, size_t bytes,
                      double timeout_s, double& seconds) {
  const uint64_t count = collectives::roundCount(c, bytes / 4, b.size());
  CCSCOPE_RETURN_IF_ERROR(b.prepare({c, count, core::DataType::kFloat, core::ReduceOp::kSum}));
  CCSCOPE_RETURN_IF_ERROR(b.run(false, Deadline::afterSeconds(timeout_s)));
  CCSCOPE_RETURN_IF_ERROR(b.barrier(Deadline::afterSeconds(timeout_s)));
  const int64_t t0 = core::nowNs();
  for (int i = 0; i < kCollectiveIters; ++i)
    CCSCOPE_RETURN_IF_ERROR(b.run(false, Deadline::afterSeconds(timeout_s)));
  double dt[1] = {static_cast<double>(core::nowNs() - t0) / 1e9 / kCollectiveIters};
  CCSCOPE_RETURN_IF_ERROR(b.maxDoubles(dt, Deadline::afterSeconds(timeout_s)));
  seconds = dt[0];
  return Status::ok();
}

Status sampleCollectives(const BurninContext& x, int sample, SoakState& st) {
  const burnin::SoakSpec& s = x.profile.soak;
  for (const std::string& name : s.collectives) {
    CCSCOPE_ASSIGN_OR_RETURN(collectives::Collective c, collectives::parseCollective(name));
    double seconds = 0;
    CCSCOPE_RETURN_IF_ERROR(
        timeCollective(*x.sampler, c, s.collective_bytes, x.profile.timeout_s, seconds)
            .prepend(fmt::format("soak sample {}: {}", sample, name)));
    if (!x.root()) continue;
    const double t = st.elapsed();
    const double busbw = static_cast<double>(s.collective_bytes) / seconds / 1e9 *
                         collectives::busbwFactor(c, x.c.size());
    st.add("collective", name, "", "busbw", sample, t, busbw);
    x.record({{"type", "soak_sample"},
              {"sample", sample},
              {"t_s", t},
              {"kind", "collective"},
              {"collective", name},
              {"bytes", s.collective_bytes},
              {"time_us", seconds * 1e6},
              {"busbw_gbps", busbw}});
    std::printf("soak %4d %7.1f s  %-40s busbw %9.3f GB/s\n", sample, t, name.c_str(), busbw);
  }
  return Status::ok();
}

// Rank 0 says when each sample starts (every `interval` from the first, or at once when the
// last ran late) and when the soak is over; the others wait for its word.
core::Result<bool> nextSample(const BurninContext& x, int i, const SoakState& st) {
  const burnin::SoakSpec& s = x.profile.soak;
  const std::string key = fmt::format("burnin/soak/go/{}", i);
  if (x.root()) {
    // Every interval from the first; at once when the last ran past it.
    const double start = std::max(i * s.interval_s, st.elapsed());
    const bool go = start < s.duration_s;
    if (go && st.elapsed() < start)
      std::this_thread::sleep_for(std::chrono::duration<double>(start - st.elapsed()));
    CCSCOPE_RETURN_IF_ERROR(x.c.put(key, go ? "1" : "0"));
    return go;
  }
  CCSCOPE_ASSIGN_OR_RETURN(
      std::string v, x.c.get(key, Deadline::afterSeconds(s.interval_s + 4 * x.profile.timeout_s)));
  return v == "1";
}

std::string seriesName(const burnin::SoakJudgement& j) {
  if (j.kind == "link") return fmt::format("link {} <-> {} {}", j.unit_a, j.unit_b, j.metric);
  return fmt::format("{} {}", j.unit_a, j.metric);  // a collective, or "every link" (fabric)
}

void judgeSoak(const BurninContext& x, const SoakState& st, std::vector<BurninFinding>& out) {
  const burnin::SoakSpec& s = x.profile.soak;
  std::vector<burnin::SoakSeries> all;
  for (const auto& [key, ser] : st.series) all.push_back(ser);
  const std::vector<burnin::SoakJudgement> js =
      burnin::judgeSoak(all, {s.degraded, s.failed, s.min_z});
  std::printf("#\n# soak verdicts (%zu series)\n", all.size());
  if (!x.latency_unjudged.empty())
    std::printf("# p99 not judged: %s\n", x.latency_unjudged.c_str());
  int found = 0;
  for (burnin::SoakJudgement j : js) {
    if (j.metric == "p99" && j.verdict != "pass" && !x.latency_unjudged.empty()) {
      std::printf("# not judged: %s: %s\n", seriesName(j).c_str(), j.why.c_str());
      j.verdict = "not_judged";
    }
    json rec = {{"type", "soak_verdict"},
                {"series", seriesName(j)},
                {"kind", j.kind},
                {"unit_a", j.unit_a},
                {"metric", j.metric},
                {"verdict", j.verdict},
                {"share", j.share},
                {"since_s", j.since_s},
                {"change_found", j.change.found},
                {"change_t_s", j.change.t_s},
                {"before", j.change.before},
                {"after", j.change.after},
                {"z", j.change.z},
                {"samples", j.samples},
                {"why", j.why}};
    if (!j.unit_b.empty()) rec["unit_b"] = j.unit_b;
    x.record(rec);
    if (j.verdict == "pass" || j.verdict == "not_judged") continue;
    ++found;
    std::printf("%-8s %s: %s\n", j.verdict == "failed" ? "FAILED" : "DEGRADED",
                seriesName(j).c_str(), j.why.c_str());
    out.push_back({j.kind, j.unit_a, j.unit_b, j.verdict, "soak", j.why, j.since_s});
  }
  if (found == 0) std::printf("# no series drifted or sat below the others\n");
  std::fflush(stdout);
}

}  // namespace

json BurninFinding::toJson() const {
  json j = {
      {"kind", kind}, {"unit_a", unit_a}, {"verdict", verdict}, {"phase", phase}, {"why", why}};
  if (!unit_b.empty()) j["unit_b"] = unit_b;
  if (since_s >= 0) j["since_s"] = since_s;
  return j;
}

Status runSoak(const BurninContext& x, std::vector<BurninFinding>& out) {
  const burnin::SoakSpec& s = x.profile.soak;
  const burnin::Scope scope = x.profile.pairs.scope;
  std::vector<Round> plan;
  if (s.links == "all") plan = burnin::planRounds(scope, x.hosts, 0, x.profile.pairs.seed);
  if (s.links == "ring") plan = burnin::ringRounds(scope, x.hosts);
  const std::vector<std::string> labels = burnin::unitLabels(scope, x.hosts);
  const burnin::PairSettings ps{s.bytes, s.lat_iters, s.test_s, x.profile.timeout_s};
  SoakState st;
  if (x.root()) {
    json links = json::array();
    for (const Round& r : plan)
      for (const Pair& p : r) links.push_back({labels[p.first], labels[p.second]});
    x.record({{"type", "soak_run"},
              {"duration_s", s.duration_s},
              {"interval_s", s.interval_s},
              {"links", links},
              {"collectives", s.collectives},
              {"bytes", s.bytes},
              {"collective_bytes", s.collective_bytes},
              {"lat_iters", s.lat_iters}});
    std::printf("#\n# soak: %.0f s, a sample every %.1f s: %zu links, %zu collectives\n",
                s.duration_s, s.interval_s, links.size(), s.collectives.size());
    std::fflush(stdout);
  }
  int round_no = 0;
  for (int i = 0;; ++i) {
    CCSCOPE_ASSIGN_OR_RETURN(bool go, nextSample(x, i, st));
    if (!go) break;
    auto on_pair = [&](int, const Pair& p, const json& f) {
      const double t = st.elapsed(), bw = f.value("bw_uni_gbps", 0.0), p99 = f.value("p99_us", 0.0);
      st.add("link", labels[p.first], labels[p.second], "bandwidth", i, t, bw);
      st.add("link", labels[p.first], labels[p.second], "p99", i, t, p99 > 0 ? 1 / p99 : 0);
      json rec = {{"type", "soak_sample"},
                  {"sample", i},
                  {"t_s", t},
                  {"kind", "link"},
                  {"unit_a", labels[p.first]},
                  {"unit_b", labels[p.second]}};
      rec.update(f);
      x.record(rec);
      std::printf("soak %4d %7.1f s  %-40s %9.3f GB/s  p99 %9.1f us\n", i, t,
                  fmt::format("{} <-> {}", labels[p.first], labels[p.second]).c_str(), bw, p99);
      std::fflush(stdout);
      return Status::ok();
    };
    CCSCOPE_RETURN_IF_ERROR(
        runPairRounds(x.c, x.t, x.buf, plan, ps, "burnin/soak/links", round_no, on_pair)
            .prepend(fmt::format("soak sample {}", i)));
    CCSCOPE_RETURN_IF_ERROR(sampleCollectives(x, i, st));
  }
  if (x.root()) judgeSoak(x, st, out);
  return Status::ok();
}

}  // namespace ccscope::app
