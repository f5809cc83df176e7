// Drift in a soak series: the one split of a series of samples (larger is better: bandwidth,
// 1/latency) that best separates two levels, and how far it stands out of the series' own
// sample-to-sample noise. A link that starts to degrade half-way through a soak shows as a
// split at the sample where it started.
#pragma once

#include <cstddef>
#include <vector>

namespace ccscope::burnin {

struct SeriesPoint {
  double t_s = 0;    // seconds since the soak started
  double value = 0;  // > 0; samples that are not are skipped
};

struct ChangePoint {
  bool found = false;
  size_t index = 0;              // the first sample of the new level, among those searched
  double t_s = 0;                // its time
  double before = 0, after = 0;  // the medians of the two levels
  double z = 0;                  // the shift of log levels in units of the noise
};

// A shift in the level of log(value), searched over every split with at least `min_segment`
// samples on each side. Its significance is the largest difference of the two sides' medians
// over its standard error (noise: 1.4826 x MAD of successive differences / sqrt 2, at least
// 1%; successive differences measure the noise without the shift itself); found when it
// reaches `min_z`. Its place is the split with the least absolute deviation from the two
// sides' medians. Over 1,000 samples the search runs on the medians of consecutive blocks.
ChangePoint findChangePoint(const std::vector<SeriesPoint>& series, double min_z = 6,
                            size_t min_segment = 3);

}  // namespace ccscope::burnin
