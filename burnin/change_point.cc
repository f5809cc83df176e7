#include "burnin/change_point.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/robust.h"

namespace ccscope::burnin {

ChangePoint findChangePoint(const std::vector<SeriesPoint>& series, double min_z,
                            size_t min_segment) {
  std::vector<double> x, t;
  for (const SeriesPoint& p : series)
    if (p.value > 0 && std::isfinite(p.value)) {
      x.push_back(std::log(p.value));
      t.push_back(p.t_s);
    }
  // Long soaks: medians of consecutive blocks, at most 1,000 of them (the search is quadratic).
  if (const size_t block = (x.size() + 999) / 1000; block > 1) {
    std::vector<double> bx, bt;
    for (size_t i = 0; i < x.size(); i += block) {
      const size_t end = std::min(x.size(), i + block);
      bx.push_back(core::median({x.begin() + static_cast<std::ptrdiff_t>(i),
                                 x.begin() + static_cast<std::ptrdiff_t>(end)}));
      bt.push_back(t[i]);
    }
    x.swap(bx);
    t.swap(bt);
  }
  ChangePoint best;
  const size_t n = x.size();
  min_segment = std::max<size_t>(min_segment, 1);
  if (n < 2 * min_segment) return best;
  std::vector<double> diffs(n - 1);
  for (size_t i = 1; i < n; ++i) diffs[i - 1] = x[i] - x[i - 1];
  // The median of the differences is ~0 for a series with one step, so MAD about it is the
  // spread of the noise; a floor of 1% keeps a flat series from making any ripple a change.
  const double noise = std::max(core::madSigma(diffs) / std::sqrt(2.0), 0.01);
  // Significance: the largest shift of medians over its standard error. Location: the split
  // with the least absolute deviation from the two medians, which, unlike the first, does not
  // drift towards the middle when the shift is far larger than the noise.
  double least_cost = std::numeric_limits<double>::infinity();
  for (size_t k = min_segment; k + min_segment <= n; ++k) {
    const std::vector<double> lhs(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(k));
    const std::vector<double> rhs(x.begin() + static_cast<std::ptrdiff_t>(k), x.end());
    const double left = core::median(lhs), right = core::median(rhs);
    const double se =
        noise * std::sqrt(1.0 / static_cast<double>(k) + 1.0 / static_cast<double>(n - k));
    best.z = std::max(best.z, std::fabs(right - left) / se);
    double cost = 0;
    for (double v : lhs) cost += std::fabs(v - left);
    for (double v : rhs) cost += std::fabs(v - right);
    if (cost < least_cost) {
      least_cost = cost;
      best.index = k;
      best.t_s = t[k];
      best.before = std::exp(left);
      best.after = std::exp(right);
    }
  }
  best.found = best.z >= min_z;
  return best;
}

}  // namespace ccscope::burnin
