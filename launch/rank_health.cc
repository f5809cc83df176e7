#include "launch/rank_health.h"

#include "launch/host_identity.h"

namespace ccscope::launch {

const char* rankStateName(RankState s) {
  switch (s) {
    case RankState::kNotJoined:
      return "not-joined";
    case RankState::kAlive:
      return "alive";
    case RankState::kFrozen:
      return "frozen";
    case RankState::kGone:
      return "gone";
    case RankState::kAborted:
      return "aborted";
    case RankState::kDone:
      return "done";
  }
  return "?";
}

void labelHosts(std::vector<RankHealth>& table) {
  std::vector<HostIdentity> ids;
  ids.reserve(table.size());
  // The address the rank itself reports, as bench and diagnose label with; under NAT the store
  // sees another one.
  for (const auto& h : table)
    ids.push_back({h.host, h.host_key, h.host_addr.empty() ? h.addr : h.host_addr});
  const std::vector<std::string> labels = hostLabels(ids);
  for (size_t i = 0; i < table.size(); ++i) table[i].host = labels[i];
}

}  // namespace ccscope::launch
