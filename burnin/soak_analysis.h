// The soak's verdicts from its series. Links are judged against each other: each sample of a
// link is divided by the median of every link at that sample, so an event that moves every link
// at once (a busy fabric, a busy machine) is one finding about the fabric, not one per link,
// and a link that drifts alone stands out of the rest. Then a shift in a series (change_point.h)
// past the thresholds is a verdict from the time it started, and a link below the median link
// all along is one from the start. Collectives are judged on their own series.
#pragma once

#include <string>
#include <vector>

#include "burnin/change_point.h"

namespace ccscope::burnin {

struct SoakSeries {
  std::string kind;    // "link" or "collective"
  std::string unit_a;  // a link's units, or the collective's name
  std::string unit_b;
  std::string metric;               // "bandwidth", "p99" (judged on 1/p99), "busbw"
  std::vector<int> sample;          // the soak's sample number of each point
  std::vector<SeriesPoint> points;  // larger is better
};

struct SoakThresholds {
  double degraded = 0.7, failed = 0.3;  // bandwidth shares
  double min_z = 6;
};

struct SoakJudgement {
  std::string kind, unit_a, unit_b, metric;  // kind "fabric": every link of the metric
  std::string verdict = "pass";              // "pass", "degraded", "failed"
  double share = 1;                          // the level after / before (or / the median link)
  double since_s = -1;                       // when a verdict started; -1 on a pass
  ChangePoint change;
  size_t samples = 0;
  std::string why;
};

// One judgement per series, plus one per link metric for the fabric (with 4 links or more).
// p99 series: 3x the level before is degraded and 10x failed, and a shift must be twice as
// significant and last a fifth of the soak (a p99 of a few hundred round trips is
// heavy-tailed).
std::vector<SoakJudgement> judgeSoak(const std::vector<SoakSeries>& series,
                                     const SoakThresholds& t);

}  // namespace ccscope::burnin
