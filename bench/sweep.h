// The one sweep driver: for each dtype x op x size, warm up, check exactly, time back-to-back
// iterations (nccl-tests' number), then a barrier-separated series for the latency
// distribution, out-of-place and in-place; every Measurement goes to the sink as it is made.
// Several backends (--interleave) take turns at each size, so that a slow spell of a shared
// machine falls on all of them alike rather than on whichever algorithm it happens to catch: the
// turns go forward and then back (each backend timing half its iterations in each), and each
// size starts one backend further on than the last.
#pragma once

#include <vector>

#include "bench/bench_config.h"
#include "bench/buffer_data.h"
#include "collectives/collective_backend.h"
#include "core/status.h"
#include "reports/measurement.h"

namespace ccscope::bench {

// Bytes of the send (and of the receive) buffer a rank needs for the whole sweep: the largest
// size, or with all-to-allv the largest per-rank volume of its plan.
core::Result<size_t> bufferBytes(const BenchConfig& cfg, int ranks);

// Runs on every rank (the statistics are collective); only rank 0 should pass a writing sink.
// A failed collective (deadline, dead peer) ends the sweep with that status; rows already
// produced have reached the sink. Backends with device buffers are filled and checked by what
// `device_data` makes (without it, such a sweep is refused).
core::Result<reports::RunSummary> runSweep(
    const BenchConfig& cfg, const std::vector<collectives::CollectiveBackend*>& backends,
    reports::ResultSink& sink, DeviceDataFactory device_data = nullptr);

}  // namespace ccscope::bench
