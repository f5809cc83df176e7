#include "bench/graph_capture.h"

#include <algorithm>

namespace ccscope::bench {

using core::Deadline;
using core::Status;

Status captureCollectives(collectives::CollectiveBackend& b, bool in_place, int iters,
                          double timeout_s, bool* skip_one) {
  collectives::DeviceRuntime* d = b.device();
  if (!d || !b.capturable())
    return Status(core::Code::kUnsupported, "-G: this backend cannot be captured into a graph");
  CCSCOPE_RETURN_IF_ERROR(d->beginCapture());
  Status s;
  for (int i = 0; i < iters && s.isOk(); ++i) {
    if (skip_one && *skip_one) {
      *skip_one = false;
      continue;
    }
    s = b.enqueue(in_place, Deadline::afterSeconds(timeout_s));
  }
  Status ended = d->endCapture();
  CCSCOPE_RETURN_IF_ERROR(s);
  return ended;
}

Status launchCaptured(collectives::CollectiveBackend& b, int iters, int launches,
                      double timeout_s) {
  CCSCOPE_RETURN_IF_ERROR(b.device()->launchGraph(launches));
  return b.drain(Deadline::afterSeconds(timeout_s * launches * std::max(1, iters)));
}

}  // namespace ccscope::bench
