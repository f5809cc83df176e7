#include "burnin/soak_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/robust.h"

namespace ccscope::burnin {

namespace {

constexpr double kLatencyDegraded = 1.0 / 3, kLatencyFailed = 0.1;
constexpr size_t kMinLinksForPopulation = 4;

std::vector<double> valuesOf(const std::vector<SeriesPoint>& points) {
  std::vector<double> v;
  for (const SeriesPoint& p : points)
    if (p.value > 0) v.push_back(p.value);
  return v;
}

// `points` are what is judged: the series itself, or relative to the other links.
SoakJudgement judge(const SoakSeries& s, const std::vector<SeriesPoint>& points, bool relative,
                    const SoakThresholds& t) {
  const bool latency = s.metric == "p99";
  const double degraded = latency ? kLatencyDegraded : t.degraded;
  const double failed = latency ? kLatencyFailed : t.failed;
  SoakJudgement j;
  j.kind = s.kind;
  j.unit_a = s.unit_a;
  j.unit_b = s.unit_b;
  j.metric = s.metric;
  j.samples = points.size();
  j.change = latency ? findChangePoint(points, 2 * t.min_z, std::max<size_t>(3, points.size() / 5))
                     : findChangePoint(points, t.min_z);
  const std::string against = relative ? " relative to the other links" : "";
  auto figure = [&](double share) { return latency && share > 0 ? 1 / share : share; };
  if (j.change.found && j.change.after < j.change.before) {
    j.share = j.change.after / j.change.before;
    j.since_s = j.change.t_s;
    j.why = fmt::format(
        "{} {:.3g}x its level before{}, from {:.1f} s into the soak ({:.0f} noise "
        "units)",
        s.metric, figure(j.share), against, j.since_s, j.change.z);
  }
  if (j.share >= degraded && relative && !points.empty()) {
    if (const double level = core::median(valuesOf(points)); level < degraded) {
      j.share = level;
      auto first = std::find_if(points.begin(), points.end(),
                                [&](const SeriesPoint& p) { return p.value < degraded; });
      j.since_s = first->t_s;
      j.why = fmt::format("{} {:.3g}x the median link's over the soak, below {:.3g}x from {:.1f} s",
                          s.metric, figure(level), figure(degraded), j.since_s);
    }
  }
  j.verdict = j.share < failed ? "failed" : j.share < degraded ? "degraded" : "pass";
  if (j.verdict == "pass") j.since_s = -1;  // a shift too small to judge: `why` still says it
  return j;
}

}  // namespace

std::vector<SoakJudgement> judgeSoak(const std::vector<SoakSeries>& series,
                                     const SoakThresholds& t) {
  std::vector<SoakJudgement> out;
  std::map<std::string, std::vector<const SoakSeries*>> links;  // by metric
  for (const SoakSeries& s : series) {
    if (s.kind == "link")
      links[s.metric].push_back(&s);
    else
      out.push_back(judge(s, s.points, false, t));
  }
  for (const auto& [metric, group] : links) {
    if (group.size() < kMinLinksForPopulation) {
      for (const SoakSeries* s : group) out.push_back(judge(*s, s->points, false, t));
      continue;
    }
    // Per sample number: the median link, and the time it was taken at (the first link's).
    std::map<int, std::vector<double>> at;
    std::map<int, double> when;
    for (const SoakSeries* s : group)
      for (size_t i = 0; i < s->points.size(); ++i)
        if (s->points[i].value > 0) {
          at[s->sample[i]].push_back(s->points[i].value);
          when.emplace(s->sample[i], s->points[i].t_s);
        }
    std::map<int, double> median;
    SoakSeries fabric{"fabric", "every link", "", metric, {}, {}};
    for (auto& [sample, values] : at) {
      median[sample] = core::medianInPlace(values);
      fabric.sample.push_back(sample);
      fabric.points.push_back({when[sample], median[sample]});
    }
    out.push_back(judge(fabric, fabric.points, false, t));
    for (const SoakSeries* s : group) {
      std::vector<SeriesPoint> rel;
      for (size_t i = 0; i < s->points.size(); ++i)
        if (s->points[i].value > 0)
          rel.push_back({s->points[i].t_s, s->points[i].value / median[s->sample[i]]});
      out.push_back(judge(*s, rel, true, t));
    }
  }
  return out;
}

}  // namespace ccscope::burnin
