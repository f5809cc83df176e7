#include "bench/graph_capture.h"

#include <algorithm>

namespace ccscope::bench {

using core::Deadline;
using core::Status;

namespace {
// `iters` collectives enqueued, the first left out where `skip_one` says so (test-only).
Status enqueueEach(collectives::CollectiveBackend& b, bool in_place, int iters, double timeout_s,
                   bool* skip_one) {
  for (int i = 0; i < iters; ++i) {
    if (skip_one && *skip_one) {
      *skip_one = false;
      continue;
    }
    CCSCOPE_RETURN_IF_ERROR(b.enqueue(in_place, Deadline::afterSeconds(timeout_s)));
  }
  return Status::ok();
}
}  // namespace

Status captureCollectives(collectives::CollectiveBackend& b, bool in_place, int iters,
                          double timeout_s, bool* skip_one) {
  collectives::DeviceRuntime* d = b.device();
  if (!d || !b.capturable())
    return Status(core::Code::kUnsupported, "-G: this backend cannot be captured into a graph");
  CCSCOPE_RETURN_IF_ERROR(d->beginCapture());
  Status s = enqueueEach(b, in_place, iters, timeout_s, skip_one);
  Status ended = d->endCapture(s.isOk());
  CCSCOPE_RETURN_IF_ERROR(s);
  return ended;
}

// The launches' marks come after the sweep's own (0 to 3).
constexpr int kFirstLaunchMark = 4;

Status launchCaptured(collectives::CollectiveBackend& b, int iters, int launches,
                      double timeout_s) {
  collectives::DeviceRuntime* d = b.device();
  Status s;
  int launched = 0;
  for (; launched < launches && s.isOk(); ++launched) {
    s = d->launchGraph();
    if (s.isOk()) s = d->mark(kFirstLaunchMark + launched);
  }
  // Each launch has --timeout per collective in it, counted from when the one before ended.
  for (int k = 0; k < launched && s.isOk(); ++k)
    s = b.drain(Deadline::afterSeconds(timeout_s * std::max(1, iters)),
                [d, k] { return d->passed(kFirstLaunchMark + k); });
  d->releaseGraph();
  return s;
}

Status enqueueAndDrain(collectives::CollectiveBackend& b, bool in_place, int iters,
                       double timeout_s, bool* skip_one) {
  collectives::DeviceRuntime* d = b.device();
  if (!d || !b.capturable())
    return Status(core::Code::kUnsupported, "-z 0: this backend cannot enqueue without waiting");
  CCSCOPE_RETURN_IF_ERROR(d->mark(0));
  CCSCOPE_RETURN_IF_ERROR(enqueueEach(b, in_place, iters, timeout_s, skip_one));
  CCSCOPE_RETURN_IF_ERROR(d->mark(1));
  return b.drain(Deadline::afterSeconds(timeout_s * std::max(1, iters)),
                 [d] { return d->passed(1); });
}

}  // namespace ccscope::bench
