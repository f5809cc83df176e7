#include "launch/rank_health.h"

#include <algorithm>

#include <fmt/format.h>

namespace ccscope::launch {

const char* rankStateName(RankState s) {
  switch (s) {
    case RankState::kNotJoined: return "not-joined";
    case RankState::kAlive: return "alive";
    case RankState::kFrozen: return "frozen";
    case RankState::kGone: return "gone";
    case RankState::kAborted: return "aborted";
    case RankState::kDone: return "done";
  }
  return "?";
}

static std::string describe(const RankHealth& h) {
  std::string host = h.host.empty() ? "" : fmt::format(" on {}", h.host);
  switch (h.state) {
    case RankState::kFrozen:
      return fmt::format("rank {}{} stopped answering: no heartbeat for {:.1f} s (process stopped, "
                         "e.g. SIGSTOP, or hung)", h.rank, host, h.ms_since_heartbeat / 1e3);
    case RankState::kGone:
      return fmt::format("rank {}{} is gone: its process exited or was killed {:.1f} s ago "
                         "(connection to the rendezvous closed without a goodbye)",
                         h.rank, host, h.ms_since_change / 1e3);
    case RankState::kNotJoined:
      return fmt::format("rank {} never joined the rendezvous", h.rank);
    case RankState::kAborted:
      return fmt::format("rank {}{} aborted: {}", h.rank, host, h.note);
    default:
      return fmt::format("rank {}{} is {}", h.rank, host, rankStateName(h.state));
  }
}

FailureVerdict firstFailure(const std::vector<RankHealth>& table, int self) {
  // How long ago the rank failed: bigger = earlier.
  auto age = [](const RankHealth& h) {
    return h.state == RankState::kFrozen ? h.ms_since_heartbeat : h.ms_since_change;
  };
  std::vector<const RankHealth*> bad;
  for (const auto& h : table)
    if (h.rank != self && (h.state == RankState::kFrozen || h.state == RankState::kGone ||
                           h.state == RankState::kNotJoined))
      bad.push_back(&h);
  if (bad.empty())
    for (const auto& h : table)
      if (h.rank != self && h.state == RankState::kAborted) bad.push_back(&h);
  FailureVerdict v;
  if (bad.empty()) return v;
  std::stable_sort(bad.begin(), bad.end(), [&](auto* a, auto* b) { return age(*a) > age(*b); });
  // Ranks that failed within a second of the first are reported together (a host going down).
  int64_t first = age(*bad.front());
  for (auto* h : bad) {
    if (first - age(*h) > 1000) break;
    v.ranks.push_back(h->rank);
    v.text += (v.text.empty() ? "" : "; ") + describe(*h);
  }
  return v;
}

}  // namespace ccscope::launch
