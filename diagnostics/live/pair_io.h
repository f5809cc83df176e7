// One rank's side of a timed exchange with one peer, shared by the pair probe and the ring-hop
// bisection: sends and receives over a registered buffer, the first message waiting longer.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/deadline.h"
#include "core/status.h"
#include "transports/transport.h"

namespace ccscope::diagnostics {

// Timed bursts grow until one takes kMinTimedSeconds, at most to kMaxTimedBytes (rampedRounds).
inline constexpr double kMinTimedSeconds = 2e-3;
inline constexpr size_t kMaxTimedBytes = 16 << 20;
// A burst whose best run took this long is slow for certain (scheduling delays are
// milliseconds): the second pass of a probe skips it instead of waiting on a throttled link
// again.
inline constexpr double kSurelySlowSeconds = 0.05;

struct PairIo {
  transports::Transport& t;
  transports::MemoryRegion mr;
  double timeout_s;
  // The partner may still be busy with an earlier (slow) pair: until its first message has
  // come, waits run under `arrive` (a send completing proves nothing: it may only have been
  // buffered). Every later wait then has the probe deadline of its own: a throttled link that
  // keeps moving is slow, not unreachable.
  core::Deadline arrive;
  bool arrived = false;
  // A request that times out is cancelled: a late message neither writes the buffer after the
  // probe let it go nor is taken for the next probe's.
  core::Status finish(transports::Request r, bool from_partner) {
    core::Status s = t.waitOrCancel(r, arrived ? core::Deadline::afterSeconds(timeout_s) : arrive);
    arrived |= from_partner && s.isOk();
    return s;
  }
  core::Status send(int peer, uint32_t tag, size_t len) {
    CCSCOPE_ASSIGN_OR_RETURN(auto r, t.postSend(peer, tag, mr, 0, len));
    return finish(r, false);
  }
  core::Status recv(int peer, uint32_t tag, size_t len) {
    CCSCOPE_ASSIGN_OR_RETURN(auto r, t.postRecv(peer, tag, mr, 0, len));
    return finish(r, true);
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

  // Runs `rounds` timed rounds at a size that first grows, x4 up to the buffer's length, until
  // a round takes `min_s`: a busy host can delay a woken process by a millisecond or two, and a
  // round much shorter than that measures the scheduler instead of the link. The lead tells the
  // other side each round's size first (tag `size_tag`, 8 bytes; 0 = done), so the other side
  // needs no schedule of its own; a lead that starts with `len` 0 runs no round at all.
  // `round(len, restart, took_s)` runs one round at `len` and says how long it took (the lead's
  // view counts); `restart` says the size grew, so the caller drops the bests it kept. `len` is
  // the first size in (the lead's) and the size measured out.
  template <class Round>
  core::Status rampedRounds(int peer, bool lead, uint32_t size_tag, int rounds, double min_s,
                            uint64_t& len, Round&& round) {
    bool grew = false;
    for (int r = 0; r < rounds;) {
      CCSCOPE_RETURN_IF_ERROR(exchange(peer, lead, size_tag, len));
      if (len == 0) return core::Status::ok();  // the lead is done (or skipped the pair)
      double took = 0;
      CCSCOPE_RETURN_IF_ERROR(round(static_cast<size_t>(len), grew, took));
      grew = false;
      if (!lead) continue;  // it follows the sizes the lead sends
      if (r == 0 && took < min_s && len * 4 <= mr.len()) {
        len *= 4;  // too short to judge: start over at the larger size
        grew = true;
      } else {
        ++r;
      }
    }
    uint64_t done = 0;
    return exchange(peer, lead, size_tag, done);
  }

  // The lead sends `value` through the buffer's first 8 bytes; the other side receives it.
  core::Status exchange(int peer, bool lead, uint32_t tag, uint64_t& value) {
    if (lead) {
      std::memcpy(mr.base(), &value, sizeof value);
      return send(peer, tag, sizeof value);
    }
    CCSCOPE_RETURN_IF_ERROR(recv(peer, tag, sizeof value));
    std::memcpy(&value, mr.base(), sizeof value);
    return core::Status::ok();
  }
};

}  // namespace ccscope::diagnostics
