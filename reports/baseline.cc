#include "reports/baseline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace ccscope::reports {

using core::Code;
using core::Status;

core::Result<double> parseTolerance(const std::string& text) {
  std::string num = text;
  if (!num.empty() && num.back() == '%') num.pop_back();
  char* end = nullptr;
  const double pct = std::strtod(num.c_str(), &end);
  if (num.empty() || *end != '\0' || !std::isfinite(pct) || pct < 0 || pct >= 100)
    return Status(Code::kInvalidArgument,
                  fmt::format("bad tolerance '{}' (a percentage in [0, 100), e.g. 10%)", text));
  return pct / 100.0;
}

std::string rowKey(const Measurement& m) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", m.collective, askedAlgorithm(m), m.transport,
                     m.ranks, m.bytes, m.dtype, m.redop, m.root, m.in_place ? "ip" : "oop");
}

std::string rowName(const Measurement& m) {
  std::string name = fmt::format("{} {} {} {}B {} {}", m.collective, askedAlgorithm(m), m.transport,
                                 m.bytes, m.dtype, m.redop);
  if (m.root >= 0 && m.collective == "broadcast") name += fmt::format(" root{}", m.root);
  return name + (m.in_place ? " in-place" : " out-of-place");
}

namespace {

// Latency-like metric: worse when it grows.
MetricDelta latencyDelta(const char* metric, double base, double now, double noise, double tol) {
  MetricDelta d{metric, "us", base, now};
  d.compared = base > 0;
  if (!d.compared) return d;
  d.change = now / base - 1;
  d.excess_us = now - base;
  d.noise_us = noise;
  d.regressed = d.change > tol && d.excess_us > noise;
  return d;
}

}  // namespace

BaselineComparison compareToBaseline(const Measurement& now, const Measurement& base,
                                     double tolerance) {
  BaselineComparison c;
  c.base = base;
  const double sigma = std::max(now.lat.stdev, base.lat.stdev);
  MetricDelta& bw = c.deltas[0];
  bw = MetricDelta{"busbw", "GB/s", base.busbw_gbps, now.busbw_gbps};
  bw.compared = base.busbw_gbps > 0;
  if (bw.compared) {
    bw.change = 1 - now.busbw_gbps / base.busbw_gbps;
    bw.excess_us = now.time_us - base.time_us;
    bw.noise_us = sigma;
    bw.regressed = bw.change > tolerance && bw.excess_us > sigma;
  }
  c.deltas[1] = latencyDelta("p50", base.lat.p50, now.lat.p50, sigma, tolerance);
  c.deltas[2] = latencyDelta("p99", base.lat.p99, now.lat.p99,
                             std::max(sigma, base.lat.p99 - base.lat.p50), tolerance);
  return c;
}

bool BaselineComparison::regressed() const {
  return std::any_of(deltas.begin(), deltas.end(),
                     [](const MetricDelta& d) { return d.regressed; });
}

std::string BaselineComparison::describe() const {
  std::string out;
  for (const MetricDelta& d : deltas) {
    if (!d.regressed) continue;
    if (!out.empty()) out += "; ";
    out +=
        fmt::format("{} {:.4g} -> {:.4g} {} ({}{:.1f}%, {:.3g} us slower, noise {:.3g} us)",
                    d.metric, d.base, d.now, d.unit, d.metric == std::string("busbw") ? "-" : "+",
                    d.change * 100, d.excess_us, d.noise_us);
  }
  return out;
}

}  // namespace ccscope::reports
