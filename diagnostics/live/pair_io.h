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
};

}  // namespace ccscope::diagnostics
