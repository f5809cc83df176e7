// Robust statistics shared by the burn-in analyses and the reports: medians and MAD scales,
// which one wild sample on a shared machine does not move.
#pragma once

#include <vector>

namespace ccscope::core {

// The median (mean of the two middle values for an even count); 0 for none. Reorders `v`.
double medianInPlace(std::vector<double>& v);
double median(std::vector<double> v);
// 1.4826 x the median absolute deviation from the median: the standard deviation of normal
// data, robustly; 0 for none.
double madSigma(const std::vector<double>& v);

}  // namespace ccscope::core
