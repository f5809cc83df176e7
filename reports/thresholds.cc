#include "reports/thresholds.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "core/units.h"

namespace ccscope::reports {

using core::Code;
using core::Status;

namespace {

core::Result<Threshold> parseOne(const std::string& item, LimitKind kind) {
  const char* unit = kind == LimitKind::kMinBusbw ? "GBPS" : "US";
  auto bad = [&](const std::string& why) {
    return Status(Code::kInvalidArgument,
                  fmt::format("bad limit '{}': {} (expected SIZE={}, e.g. 1M={})", item, why, unit,
                              kind == LimitKind::kMinBusbw ? "5" : "250"));
  };
  const size_t eq = item.find('=');
  if (eq == std::string::npos) return bad("no '='");
  auto bytes = core::parseSize(item.substr(0, eq));
  if (!bytes) return bad(bytes.status().message());
  const std::string num = item.substr(eq + 1);
  char* end = nullptr;
  const double v = std::strtod(num.c_str(), &end);
  if (num.empty() || *end != '\0' || !std::isfinite(v) || v < 0) return bad("not a number >= 0");
  return Threshold{kind, *bytes, v, item};
}

}  // namespace

core::Result<std::vector<Threshold>> parseThresholds(const std::string& text, LimitKind kind) {
  std::vector<Threshold> out;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (!item.empty()) {
      CCSCOPE_ASSIGN_OR_RETURN(Threshold t, parseOne(item, kind));
      out.push_back(std::move(t));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::optional<std::string> checkThreshold(const Threshold& t, const Measurement& m) {
  if (m.bytes != t.bytes) return std::nullopt;
  if (t.kind == LimitKind::kMinBusbw && m.busbw_gbps < t.value)
    return fmt::format("busbw {:.3f} GB/s below the minimum {:g} GB/s ({})", m.busbw_gbps, t.value,
                       thresholdName(t));
  if (t.kind == LimitKind::kMaxLatency && m.lat.p50 > t.value)
    return fmt::format("p50 latency {:.2f} us above the maximum {:g} us ({})", m.lat.p50, t.value,
                       thresholdName(t));
  return std::nullopt;
}

std::string thresholdName(const Threshold& t) {
  return fmt::format("--{} {}", t.kind == LimitKind::kMinBusbw ? "min-busbw" : "max-lat", t.text);
}

}  // namespace ccscope::reports
