// The clock-skew probe of `ccscope diagnose` (bootstrap layer). Once the transport is connected,
// rank 0 exchanges a few timestamp ping-pongs with every other rank and estimates each peer's
// wall-clock offset NTP-style. Clocks seconds apart break token and certificate lifetimes,
// launcher heartbeats and every cross-rank log timeline, so a job should not start with them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "diagnostics/live/probes.h"
#include "transports/transport.h"

namespace ccscope::diagnostics {

// One exchange, all CLOCK_REALTIME nanoseconds: rank 0 sent at t_send and got the answer at
// t_recv; the peer read its clock at t_remote in between.
struct ClockSample {
  int64_t t_send_ns = 0;
  int64_t t_remote_ns = 0;
  int64_t t_recv_ns = 0;
};

struct ClockOffset {
  bool valid = false;          // false: no usable sample (none, or every round trip negative)
  int64_t offset_ns = 0;       // peer clock minus rank 0's clock
  int64_t uncertainty_ns = 0;  // the true offset lies within offset +- uncertainty
  int64_t rtt_ns = 0;          // round trip of the sample used
};

// offset = t_remote - (t_send + t_recv) / 2 of the sample with the smallest round trip, and
// uncertainty = that round trip / 2: whatever the split of the delay between the two ways, the
// peer read its clock somewhere inside the round trip. Pure, for tests.
ClockOffset estimateClockOffset(std::span<const ClockSample> samples);

struct PeerClock {
  int rank = -1;
  bool answered = false;
  std::string error;  // when it did not answer
  ClockOffset offset;
};

// Rank 0: the verdict from every peer's estimate. Fails (bootstrap, culprit the rank and host)
// when |offset| - uncertainty exceeds max_skew_s; when every rank on every other host is off the
// same way, rank 0's own host is the odd one out and the culprit. A peer that did not answer is
// a host-network failure naming it (and the link to it from rank 0's host).
ProbeResult judgeClockSkew(const std::vector<PeerClock>& peers,
                           const std::vector<std::string>& hosts, double max_skew_s);

// Rank 0: exchanges kClockRounds timestamps with each of `peers`, one peer after another, each
// under the probe deadline.
std::vector<PeerClock> measureClockSkew(transports::Transport& t, const std::vector<int>& peers,
                                        const ProbeOptions& o);
// Other ranks: answers rank 0's pings; the first one may take up to arrive_s to come (rank 0
// serves the peers in turn).
core::Status answerClockSkew(transports::Transport& t, const ProbeOptions& o, double arrive_s);

// "+1.250 s", "-0.000042 s": enough digits to show a sub-millisecond skew.
std::string formatOffset(int64_t ns);

}  // namespace ccscope::diagnostics
