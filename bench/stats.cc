#include "bench/stats.h"

#include <algorithm>
#include <cmath>

namespace ccscope::bench {

reports::LatencyStats latencyStats(std::vector<double> v) {
  reports::LatencyStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto pct = [&](double p) {
    size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
  };
  s.min = v.front();
  s.max = v.back();
  s.p50 = pct(50);
  s.p90 = pct(90);
  s.p99 = pct(99);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - s.mean) * (x - s.mean);
  s.stdev = std::sqrt(var / static_cast<double>(v.size()));
  return s;
}

}  // namespace ccscope::bench
