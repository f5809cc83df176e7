#include "core/robust.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace ccscope::core {

double medianInPlace(std::vector<double>& v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  const double hi = *mid;
  if (v.size() % 2 == 1) return hi;
  return (*std::max_element(v.begin(), mid) + hi) / 2;
}

double median(std::vector<double> v) { return medianInPlace(v); }

double madSigma(const std::vector<double>& v) {
  const double m = median(v);
  std::vector<double> dev(v.size());
  for (size_t i = 0; i < v.size(); ++i) dev[i] = std::fabs(v[i] - m);
  return 1.4826 * medianInPlace(dev);
}

}  // namespace ccscope::core
