#include "model/tail.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace ccscope::model {

using core::Code;
using core::Status;

namespace {

constexpr double kZ99 = 2.3263478740408408;  // the standard normal's 99th percentile
constexpr int kGrid = 4096;
// Beyond this many summed samples the sum is taken as normal: 20 M draws are about 0.3 s.
constexpr double kMonteCarloDraws = 2e7;

struct Dist {
  double mu, sigma, shift, weight;  // log-normal(mu, sigma) + shift, `weight` links of it
};

double logNormalCdfLog(const Dist& d, double x) {
  if (x <= d.shift) return -std::numeric_limits<double>::infinity();
  double z = (std::log(x - d.shift) - d.mu) / d.sigma;
  return std::log(std::max(0.5 * std::erfc(-z / std::sqrt(2.0)), 1e-300));
}

// The step maximum's distribution on a log-spaced grid: x[i], cdf[i].
void stepGrid(const std::vector<Dist>& ds, std::vector<double>& x, std::vector<double>& cdf) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& d : ds) {
    lo = std::min(lo, d.shift + std::exp(d.mu - 5 * d.sigma));
    hi = std::max(hi, d.shift + std::exp(d.mu + (6 + std::log10(d.weight + 1)) * d.sigma));
  }
  x.resize(kGrid);
  cdf.resize(kGrid);
  for (int i = 0; i < kGrid; ++i) {
    x[i] = lo * std::pow(hi / lo, i / double(kGrid - 1));
    double l = 0;
    for (const auto& d : ds) l += d.weight * logNormalCdfLog(d, x[i]);
    cdf[i] = std::exp(l);
  }
  cdf.back() = 1;
}

double quantile(const std::vector<double>& x, const std::vector<double>& cdf, double u) {
  auto it = std::lower_bound(cdf.begin(), cdf.end(), u);
  size_t i = std::min<size_t>(static_cast<size_t>(it - cdf.begin()), x.size() - 1);
  if (i == 0 || cdf[i] == cdf[i - 1]) return x[i];
  double f = (u - cdf[i - 1]) / (cdf[i] - cdf[i - 1]);
  return x[i - 1] + f * (x[i] - x[i - 1]);
}

}  // namespace

TailQuery ringAllreduceTail(std::vector<LinkTail> links, int ranks, double bytes) {
  TailQuery q;
  q.links = std::move(links);
  q.steps = 2 * (ranks - 1);
  q.step_bytes = bytes / std::max(1, ranks);
  return q;
}

core::Result<TailResult> predictTail(const TailQuery& q) {
  if (q.links.empty() || q.steps < 1)
    return Status(Code::kInvalidArgument, "tail: no links or no steps");
  std::vector<Dist> ds;
  for (const auto& l : q.links) {
    if (l.p50_s <= 0 || l.p99_s < l.p50_s || l.links <= 0)
      return Status(Code::kInvalidArgument, "tail: a link needs 0 < p50 <= p99");
    double shift = l.bytes_per_s > 0 ? q.step_bytes / l.bytes_per_s : 0;
    ds.push_back(
        {std::log(l.p50_s), std::max(1e-6, std::log(l.p99_s / l.p50_s) / kZ99), shift, l.links});
  }
  std::vector<double> x, cdf;
  stepGrid(ds, x, cdf);
  double mean = 0, sq = 0, prev = 0;
  for (int i = 0; i < kGrid; ++i) {
    double p = cdf[i] - prev, mid = i ? 0.5 * (x[i] + x[i - 1]) : x[i];
    mean += p * mid, sq += p * mid * mid, prev = cdf[i];
  }
  TailResult r;
  r.step_mean_s = mean;
  r.step_p50_s = quantile(x, cdf, 0.5);
  r.mean_s = mean * q.steps;
  if (double(q.steps) * q.trials <= kMonteCarloDraws) {
    std::mt19937_64 rng(q.seed);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<double> sums(q.trials, 0);
    for (auto& s : sums)
      for (int k = 0; k < q.steps; ++k) s += quantile(x, cdf, u(rng));
    std::sort(sums.begin(), sums.end());
    r.p50_s = sums[sums.size() / 2];
    r.p99_s = sums[std::min(sums.size() - 1, sums.size() * 99 / 100)];
    r.method = "monte-carlo";
  } else {
    double sd = std::sqrt(std::max(0.0, sq - mean * mean) * q.steps);
    r.p50_s = r.mean_s;
    r.p99_s = r.mean_s + kZ99 * sd;
    r.method = "normal";
  }
  return r;
}

}  // namespace ccscope::model
