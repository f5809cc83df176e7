// Per-size limits checked on every row: `--min-busbw SIZE=GBPS,...` and `--max-lat SIZE=US,...`.
// A limit applies to the rows whose message size equals SIZE (every algorithm, transport,
// placement, dtype and op); a limit that matches no row at all is itself a failure, so a typo
// in a CI line cannot pass silently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "reports/measurement.h"

namespace ccscope::reports {

enum class LimitKind { kMinBusbw, kMaxLatency };

struct Threshold {
  LimitKind kind = LimitKind::kMinBusbw;
  uint64_t bytes = 0;
  double value = 0;  // GB/s for kMinBusbw, microseconds (p50 latency) for kMaxLatency
  std::string text;  // as the user wrote it: "1M=5"
};

// "1M=5,64M=20.5" (sizes with binary suffixes as -b/-e); empty text gives no limits.
core::Result<std::vector<Threshold>> parseThresholds(const std::string& text, LimitKind kind);

// The message when `m` violates `t`, nothing when it does not apply or holds.
std::optional<std::string> checkThreshold(const Threshold& t, const Measurement& m);

// "--min-busbw 1M=5" as a flag would be written back.
std::string thresholdName(const Threshold& t);

}  // namespace ccscope::reports
