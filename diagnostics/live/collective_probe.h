// The collective probe of `ccscope diagnose`: a 1 MiB ring allreduce over every transport that
// applies (tcp always, shm when every rank is on one host), and, when it fails or runs far
// slower than the pair probe says the network can, the bisection to the ring hop: 1 MiB over
// each hop r -> r+1 alone, one hop at a time, so the link that breaks or drags the ring is
// named instead of "the allreduce failed".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "diagnostics/live/probes.h"
#include "transports/transport.h"

namespace ccscope::diagnostics {

inline constexpr size_t kCollectiveProbeBytes = 1 << 20;
// A hop, or the ring as a whole, under a quarter of the median is slow: healthy links on one
// fabric differ far less, a throttled or degraded one far more.
inline constexpr double kSlowHopFraction = 0.25;

// Every rank: one ring allreduce of kCollectiveProbeBytes over `t`:
// {"ok", "detail", "peer" (whom it waited for when it failed), "seconds"}.
nlohmann::json runAllreduceProbe(transports::Transport& t, const ProbeOptions& o);

// Rank 0: the verdict (application layer) of one transport's allreduce. Ranks that failed name
// whom they waited for; a rank waited for that finished its own side is the culprit (it skipped
// the collective or used another count), else the ranks that failed. {"skipped": reason}
// entries are ranks that could not take part (their transport did not connect).
ProbeResult judgeAllreduce(const std::vector<nlohmann::json>& per_rank,
                           const std::string& transport, const std::vector<std::string>& hosts);

// Rank 0: why the ring should be bisected ("" = no need): a rank failed, or the ranks span
// several hosts and the allreduce's bus bandwidth is under kSlowHopFraction of the pairs'
// median. Never when a rank is missing or skipped (that is already the finding).
std::string bisectionReason(const std::vector<nlohmann::json>& per_rank,
                            const std::vector<std::string>& hosts, double pair_median_gbps);

// Every rank: `bytes` over each ring hop r -> r+1 in hop order, best of a few runs, each hop
// under the probe deadline, the burst growing from `bytes` until one takes 2 ms; then a second
// pass over the hops that did not fail and were not surely slow (50 ms and more), so a hop is
// only slow when it is slow twice. Returns this rank's records: [{"hop", "role": "send"|"recv",
// "peer", "ok", "gbps" (sender: best of all passes), "passes" (sender: each pass's best),
// "error"}].
nlohmann::json measureRingHops(transports::Transport& t, const ProbeOptions& o, size_t bytes);

// Rank 0: the hop that failed (layer host-network between two hosts, library on one host) or,
// between different hosts only, is under kSlowHopFraction of the median hop between hosts.
// `reason` says why the ring was bisected.
ProbeResult judgeRingHops(const std::vector<nlohmann::json>& per_rank,
                          const std::vector<std::string>& hosts, const std::string& transport,
                          const std::string& reason);

}  // namespace ccscope::diagnostics
