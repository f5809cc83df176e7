// One rank's side of a timed exchange with one peer, shared by the pair probe and the ring-hop
// bisection: sends and receives over a registered buffer, the first message waiting longer.
#pragma once

#include "core/deadline.h"
#include "core/status.h"
#include "transports/transport.h"

namespace ccscope::diagnostics {

struct PairIo {
  transports::Transport& t;
  transports::MemoryRegion mr;
  double timeout_s;
  // The partner may still be busy with an earlier (slow) pair: the first message of a pair
  // waits up to `arrive` for it; the measurement itself then runs under the probe deadline.
  core::Deadline arrive;
  core::Deadline d = core::Deadline::afterSeconds(0);
  bool arrived = false;
  core::Status finish(transports::Request r) {
    core::Status s = t.wait(r, arrived ? d : arrive);
    if (!arrived) {
      arrived = true;
      d = core::Deadline::afterSeconds(timeout_s);
    }
    return s;
  }
  core::Status send(int peer, uint32_t tag, size_t len) {
    CCSCOPE_ASSIGN_OR_RETURN(auto r, t.postSend(peer, tag, mr, 0, len));
    return finish(r);
  }
  core::Status recv(int peer, uint32_t tag, size_t len) {
    CCSCOPE_ASSIGN_OR_RETURN(auto r, t.postRecv(peer, tag, mr, 0, len));
    return finish(r);
  }
  // One timed burst of `len` bytes from the sender, acknowledged with 8 bytes; both sides time
  // it, and `best_s` keeps the fastest of the calls so far.
  core::Status burst(int peer, bool sender, uint32_t tag, uint32_t ack_tag, size_t len,
                     double& best_s) {
    int64_t t0 = core::nowNs();
    if (sender) {
      CCSCOPE_RETURN_IF_ERROR(send(peer, tag, len));
      CCSCOPE_RETURN_IF_ERROR(recv(peer, ack_tag, 8));
    } else {
      CCSCOPE_RETURN_IF_ERROR(recv(peer, tag, len));
      CCSCOPE_RETURN_IF_ERROR(send(peer, ack_tag, 8));
    }
    double s = (core::nowNs() - t0) / 1e9;
    if (s < best_s) best_s = s;
    return core::Status::ok();
  }
};

}  // namespace ccscope::diagnostics
