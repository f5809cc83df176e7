#include "bench/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ccscope::bench {

namespace {
constexpr double kHistFloorUs = 1e-3;  // a sample below a nanosecond counts as a nanosecond

double roundSignificant(double x, int digits) {
  const double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(x))));
  return std::round(x * scale) / scale;
}
}  // namespace

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
  // v is sorted, so equal buckets are adjacent.
  int current = INT32_MIN;
  for (double x : v) {
    const int k = static_cast<int>(
        std::floor(reports::kHistBucketsPerOctave * std::log2(std::max(x, kHistFloorUs))));
    if (k != current) {
      const double lower = std::exp2(static_cast<double>(k) / reports::kHistBucketsPerOctave);
      s.hist.push_back({roundSignificant(lower, 4), 0});
      current = k;
    }
    ++s.hist.back().count;
  }
  return s;
}

}  // namespace ccscope::bench
