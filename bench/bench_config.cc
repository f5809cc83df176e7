#include "bench/bench_config.h"

#include <fmt/format.h>

#include "collectives/collective.h"
#include "core/units.h"

namespace ccscope::bench {

using core::Code;
using core::Status;

std::vector<uint64_t> sweepSizes(const BenchConfig& cfg) {
  std::vector<uint64_t> out;
  uint64_t b = cfg.min_bytes;
  while (b <= cfg.max_bytes) {
    out.push_back(b);
    uint64_t next =
        cfg.step ? b + cfg.step : static_cast<uint64_t>(static_cast<double>(b) * cfg.factor);
    if (next <= b) break;
    b = next;
  }
  return out;
}

Status validate(const BenchConfig& c) {
  auto bad = [](std::string m) { return Status(Code::kInvalidArgument, std::move(m)); };
  if (c.min_bytes > c.max_bytes)
    return bad(fmt::format("-b {} is larger than -e {}", core::formatBytes(c.min_bytes),
                           core::formatBytes(c.max_bytes)));
  if (c.step == 0 && c.factor <= 1.0 && c.min_bytes != c.max_bytes)
    return bad(fmt::format("-f must be greater than 1 (got {})", c.factor));
  if (c.iters < 1) return bad(fmt::format("-n must be at least 1 (got {})", c.iters));
  if (c.warmup < 0) return bad(fmt::format("-w must not be negative (got {})", c.warmup));
  if (c.checks < 0) return bad(fmt::format("-c must not be negative (got {})", c.checks));
  if (c.timeout_s <= 0) return bad("--timeout must be positive");
  if (c.max_bytes > (64ull << 30)) return bad("-e above 64 GiB is not supported");
  if (!c.out_of_place && !c.in_place) return bad("--placement leaves nothing to measure");
  if (!c.out_of_place && !collectives::geometry(c.collective, 0, 2, 0, nullptr).in_place_supported)
    return bad(fmt::format("--placement in: {} has no in-place form here (try out or both)",
                           collectives::collectiveName(c.collective)));
  return Status::ok();
}

}  // namespace ccscope::bench
