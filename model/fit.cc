#include "model/fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace ccscope::model {

using core::Code;
using core::Status;

namespace {

// Least squares on the columns in `mask` (normal equations, columns scaled to unit norm so
// counts of messages and of bytes weigh alike); nullopt when singular.
std::optional<std::vector<double>> solveSubset(const std::vector<double>& a,
                                               const std::vector<double>& b, int cols,
                                               unsigned mask) {
  std::vector<int> idx;
  for (int c = 0; c < cols; ++c)
    if (mask & (1U << c)) idx.push_back(c);
  const size_t k = idx.size(), rows = b.size();
  std::vector<double> scale(k, 0);
  for (size_t j = 0; j < k; ++j) {
    for (size_t r = 0; r < rows; ++r) scale[j] += a[r * cols + idx[j]] * a[r * cols + idx[j]];
    scale[j] = std::sqrt(scale[j]);
    if (scale[j] == 0) return std::nullopt;
  }
  // [M | v] with M = S A'A S and v = S A'b.
  std::vector<double> m(k * (k + 1), 0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < k; ++i) {
      double ai = a[r * cols + idx[i]] / scale[i];
      for (size_t j = 0; j < k; ++j) m[i * (k + 1) + j] += ai * a[r * cols + idx[j]] / scale[j];
      m[i * (k + 1) + k] += ai * b[r];
    }
  for (size_t p = 0; p < k; ++p) {
    size_t best = p;
    for (size_t i = p + 1; i < k; ++i)
      if (std::abs(m[i * (k + 1) + p]) > std::abs(m[best * (k + 1) + p])) best = i;
    if (std::abs(m[best * (k + 1) + p]) < 1e-12) return std::nullopt;
    for (size_t j = 0; j <= k; ++j) std::swap(m[p * (k + 1) + j], m[best * (k + 1) + j]);
    for (size_t i = 0; i < k; ++i) {
      if (i == p) continue;
      double f = m[i * (k + 1) + p] / m[p * (k + 1) + p];
      for (size_t j = p; j <= k; ++j) m[i * (k + 1) + j] -= f * m[p * (k + 1) + j];
    }
  }
  std::vector<double> x(cols, 0);
  for (size_t i = 0; i < k; ++i) x[idx[i]] = m[i * (k + 1) + k] / m[i * (k + 1) + i] / scale[i];
  return x;
}

double residual(const std::vector<double>& a, const std::vector<double>& b,
                const std::vector<double>& x, int cols) {
  double s = 0;
  for (size_t r = 0; r < b.size(); ++r) {
    double e = -b[r];
    for (int c = 0; c < cols; ++c) e += a[r * cols + c] * x[c];
    s += e * e;
  }
  return s;
}

}  // namespace

// With at most five columns every subset is solved and the best non-negative one kept: the
// same answer as Lawson-Hanson, in a few microseconds.
std::vector<double> nnls(const std::vector<double>& a, const std::vector<double>& b, int cols) {
  std::vector<double> best(cols, 0);
  double best_res = residual(a, b, best, cols);
  for (unsigned mask = 1; mask < (1U << cols); ++mask) {
    auto x = solveSubset(a, b, cols, mask);
    if (!x || std::any_of(x->begin(), x->end(), [](double v) { return v < 0; })) continue;
    double res = residual(a, b, *x, cols);
    if (res < best_res) best_res = res, best = *x;
  }
  return best;
}

core::Result<Fit> fitRows(const std::vector<FitRow>& rows) {
  if (rows.empty()) return Status(Code::kInvalidArgument, "model fit: no rows to fit");
  Fit f;
  std::vector<SimResult> sims(rows.size());
  for (f.iterations = 1; f.iterations <= 12; ++f.iterations) {
    std::vector<double> a, b;
    for (size_t i = 0; i < rows.size(); ++i) {
      CCSCOPE_ASSIGN_OR_RETURN(sims[i], simulate(rows[i].sim, f.params));
      for (double c : sims[i].counts) a.push_back(c / rows[i].measured_s);
      b.push_back(1.0);
    }
    auto x = nnls(a, b, kFeatures);
    std::array<double, kFeatures> v{};
    std::copy(x.begin(), x.end(), v.begin());
    auto old = paramVector(f.params);
    f.params = paramsFrom(v);
    double change = 0;
    for (int k = 0; k < kFeatures; ++k)
      change = std::max(change, std::abs(v[k] - old[k]) / std::max(v[k], 1e-30));
    if (change < 1e-3) break;
  }
  double mean = 0, ss_tot = 0, ss_res = 0;
  for (const auto& r : rows) mean += std::log(r.measured_s) / static_cast<double>(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    CCSCOPE_ASSIGN_OR_RETURN(SimResult s, simulate(rows[i].sim, f.params));
    for (int k = 0; k < kFeatures; ++k) f.fitted[k] = f.fitted[k] || s.counts[k] > 0;
    f.rows.push_back({rows[i].measured_s, s.seconds});
    f.max_abs_error = std::max(f.max_abs_error, std::abs(f.rows.back().error()));
    ss_tot += std::pow(std::log(rows[i].measured_s) - mean, 2);
    ss_res += std::pow(std::log(s.seconds / rows[i].measured_s), 2);
  }
  f.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
  return f;
}

core::Result<Fit> fitRowsAndCache(std::vector<FitRow> rows) {
  std::optional<Fit> best;
  for (double llc = 0; llc <= double(1 << 30); llc = llc == 0 ? double(1 << 20) : llc * 2) {
    for (auto& r : rows) r.sim.beyond_cache = beyondCache(r.working_set, llc);
    CCSCOPE_ASSIGN_OR_RETURN(Fit f, fitRows(rows));
    f.llc_bytes = f.fitted[kBeyondCacheIndex] ? llc : 0;
    if (!best || f.r2 > best->r2 + 1e-9) best = std::move(f);
  }
  return *best;
}

}  // namespace ccscope::model
