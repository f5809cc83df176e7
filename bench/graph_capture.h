// bench -G: collectives captured from a backend's device stream into one CUDA graph, then the
// graph launched and waited for, as nccl-tests' CUDA-graph mode does; and bench -z 0:
// collectives enqueued on the stream back to back, waited for once.
#pragma once

#include "collectives/collective_backend.h"
#include "core/status.h"

namespace ccscope::bench {

// `iters` collectives enqueued (CollectiveBackend::enqueue) between the device's beginCapture
// and endCapture; the capture is ended even after a failure. `skip_one` (test-only): the first
// of them is left out, and the flag cleared.
core::Status captureCollectives(collectives::CollectiveBackend& b, bool in_place, int iters,
                                double timeout_s, bool* skip_one = nullptr);

// The captured graph launched `launches` times back to back (a mark after each), then drained
// launch by launch, each under --timeout for each of its `iters` collectives; the graph is
// released afterwards, whatever happened.
core::Status launchCaptured(collectives::CollectiveBackend& b, int iters, int launches,
                            double timeout_s);

// -z 0: `iters` collectives enqueued (CollectiveBackend::enqueue) without waiting, between the
// device's marks 0 and 1, then drained once under --timeout for each. `skip_one` as above.
core::Status enqueueAndDrain(collectives::CollectiveBackend& b, bool in_place, int iters,
                             double timeout_s, bool* skip_one = nullptr);

}  // namespace ccscope::bench
