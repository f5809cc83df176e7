// The soak of `ccscope burnin`: every interval, each link of the plan measured as a pair (all
// of them, or each unit with the next: `links`) and each chosen collective timed; every sample
// streams as a `soak_sample` record as it is taken, so a soak killed half-way keeps them all.
// At the end, each series is searched for the one shift in level that stands out of its own
// noise (burnin/change_point.h): a drop past the profile's shares is a verdict with the time
// it started. A link below the other links all along is one too.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <thread>

#include "app/burnin_phases.h"
#include "app/pairs_job.h"
#include "burnin/change_point.h"
#include "core/deadline.h"
#include "core/robust.h"

namespace ccscope::app {

using burnin::Pair;
using burnin::Round;
using burnin::SeriesPoint;
using core::Code;
using core::Deadline;
using core::Status;
using nlohmann::json;

namespace {

// Where `p99` is judged on 1/p99: 3x the level before is degraded, 10x failed (as in pairs).
constexpr double kLatencyDegraded = 1.0 / 3, kLatencyFailed = 0.1;
constexpr int kCollectiveIters = 5;

struct Series {
  std::string kind, unit_a, unit_b, metric;  // metric: "bandwidth", "p99", "busbw"
  std::vector<SeriesPoint> points;
};

struct SoakState {
  std::map<std::string, Series> series;  // rank 0
  int64_t t0_ns = core::nowNs();
  double elapsed() const { return static_cast<double>(core::nowNs() - t0_ns) / 1e9; }
  void add(const std::string& kind, const std::string& a, const std::string& b,
           const std::string& metric, double t, double value) {
    Series& s = series[kind + "|" + a + "|" + b + "|" + metric];
    s.kind = kind;
    s.unit_a = a;
    s.unit_b = b;
    s.metric = metric;
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
    st.add("collective", name, "", "busbw", t, busbw);
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
    const double start = i * s.interval_s;
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

std::string seriesName(const Series& s) {
  return s.kind == "link" ? fmt::format("link {} <-> {} {}", s.unit_a, s.unit_b, s.metric)
                          : fmt::format("{} {}", s.unit_a, s.metric);
}

}  // namespace

namespace {

// The series' verdict: its drop at the change point, or else its level against the median
// link's (links' bandwidth, with at least 4 links to judge against).
BurninFinding judgeSeries(const burnin::SoakSpec& s, const Series& ser, double population,
                          json& rec) {
  const bool latency = ser.metric == "p99";
  const double degraded = latency ? kLatencyDegraded : s.degraded;
  const double failed = latency ? kLatencyFailed : s.failed;
  // A p99 of a few hundred round trips is heavy-tailed: a shift in it must be twice as
  // significant and last a fifth of the soak before it counts.
  const burnin::ChangePoint cp =
      latency ? burnin::findChangePoint(ser.points, 2 * s.min_z,
                                        std::max<size_t>(3, ser.points.size() / 5))
              : burnin::findChangePoint(ser.points, s.min_z);
  BurninFinding f{ser.kind, ser.unit_a, ser.unit_b, "pass", "soak", "", -1};
  double share = 1;
  if (cp.found && cp.after < cp.before) {
    share = cp.after / cp.before;
    f.since_s = cp.t_s;
    f.why = fmt::format(
        "{} {:.3g}x its level before, from {:.1f} s into the soak ({:.0f} noise "
        "units)",
        ser.metric, latency ? 1 / share : share, cp.t_s, cp.z);
  }
  if (share >= degraded && population > 0 && ser.kind == "link" && ser.metric == "bandwidth") {
    std::vector<double> v;
    for (const SeriesPoint& p : ser.points) v.push_back(p.value);
    if (const double level = core::median(v) / population; level < degraded) {
      share = level;
      f.since_s = ser.points.front().t_s;
      f.why = fmt::format("bandwidth {:.3g}x the median link's, all through the soak", level);
    }
  }
  f.verdict = share < failed ? "failed" : share < degraded ? "degraded" : "pass";
  rec = {{"type", "soak_verdict"},
         {"series", seriesName(ser)},
         {"kind", ser.kind},
         {"unit_a", ser.unit_a},
         {"metric", ser.metric},
         {"verdict", f.verdict},
         {"share", share},
         {"since_s", f.since_s},
         {"change_found", cp.found},
         {"change_t_s", cp.t_s},
         {"before", cp.before},
         {"after", cp.after},
         {"z", cp.z},
         {"samples", ser.points.size()},
         {"why", f.why}};
  if (!ser.unit_b.empty()) rec["unit_b"] = ser.unit_b;
  return f;
}

void judgeSoak(const BurninContext& x, const SoakState& st, std::vector<BurninFinding>& out) {
  std::vector<double> medians;
  for (const auto& [key, ser] : st.series) {
    if (ser.kind != "link" || ser.metric != "bandwidth") continue;
    std::vector<double> v;
    for (const SeriesPoint& p : ser.points) v.push_back(p.value);
    medians.push_back(core::median(v));
  }
  const double population = medians.size() >= 4 ? core::median(medians) : 0;
  std::printf("#\n# soak verdicts (%zu series)\n", st.series.size());
  int found = 0;
  for (const auto& [key, ser] : st.series) {
    json rec;
    BurninFinding f = judgeSeries(x.profile.soak, ser, population, rec);
    x.record(rec);
    if (f.verdict == "pass") continue;
    ++found;
    std::printf("%-8s %s: %s\n", f.verdict == "failed" ? "FAILED" : "DEGRADED",
                seriesName(ser).c_str(), f.why.c_str());
    out.push_back(std::move(f));
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
      st.add("link", labels[p.first], labels[p.second], "bandwidth", t, bw);
      st.add("link", labels[p.first], labels[p.second], "p99", t, p99 > 0 ? 1 / p99 : 0);
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
