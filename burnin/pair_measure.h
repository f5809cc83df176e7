// One pair's measurement in `ccscope pairs`, run by both ranks of the pair over the job's
// transport: small-message round trips (latency percentiles), then one-way and both-ways
// bandwidth at a large size, each timed for about `seconds` after a one-message calibration and
// cut short 4x past it: a link that slows during the test ends it within one batch, a 32nd of
// the calibrated count at most.
#pragma once

#include <cstddef>

#include "core/deadline.h"
#include "core/status.h"
#include "transports/transport.h"

namespace ccscope::burnin {

struct PairSettings {
  size_t bytes = size_t{1} << 20;  // bandwidth message size
  int lat_iters = 2000;            // round trips timed (after lat_iters / 10 warm-up ones)
  double seconds = 0.2;            // time per bandwidth test, about; 4x plus a batch at most
  double timeout_s = 30;           // per operation
};

// What the lower rank of the pair (the one that times) measured; the other rank's copy is empty.
struct PairFigures {
  double uni_gbps = 0;                                     // lower -> higher rank, GB/s (10^9 B/s)
  double bidir_gbps = 0;                                   // both directions at once, their sum
  double p50_us = 0, p99_us = 0, p999_us = 0, max_us = 0;  // half round trips
  int lat_samples = 0;
  int uni_messages = 0, bidir_messages = 0;
};

// `buf` is a registered region of at least 2 x settings.bytes.
core::Result<PairFigures> measurePair(transports::Transport& t, const transports::MemoryRegion& buf,
                                      int peer, bool lead, const PairSettings& settings);

// Aggressor traffic: `count` messages of `bytes` each way with `peer` at once; both ranks call
// it (`buf` at least 2 x bytes).
core::Status exchange(transports::Transport& t, const transports::MemoryRegion& buf, int peer,
                      size_t bytes, int count, double timeout_s);

// Value at fraction q (0..1) of sorted samples, nearest rank.
double percentile(const std::vector<double>& sorted, double q);

}  // namespace ccscope::burnin
