// What the rendezvous store knows about each rank's liveness, and how a rank that hit a timeout
// turns that into "who stopped answering".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ccscope::launch {

// A rank without a heartbeat for this long is reported frozen (stopped or hung).
inline constexpr int64_t kFrozenAfterMs = 2000;
inline constexpr int64_t kHeartbeatEveryMs = 200;

enum class RankState : uint32_t { kNotJoined, kAlive, kFrozen, kGone, kAborted, kDone };
const char* rankStateName(RankState s);

struct RankHealth {
  int rank = -1;
  RankState state = RankState::kNotJoined;
  int64_t ms_since_heartbeat = 0;
  int64_t ms_since_change = 0;  // since it went gone / aborted / done
  std::string host;             // a label that tells hosts apart (launch/host_identity.h)
  std::string host_key;         // boot id and network namespace
  std::string host_addr;  // the address the rank says it reaches the store from (labels use it)
  std::string addr;       // IP the store sees the rank's control connection come from
  std::string note;       // abort reason
  std::string progress;   // the rank's last progress snapshot (flight recorder, JSON)
  // The signal that ended a gone rank, where the launcher that reaped it told the store; 0 when
  // unknown or when it exited.
  int end_signal = 0;
};

// Replaces each entry's hostname by a label that tells hosts apart (hostLabels): two ranks with
// one hostname on different machines or network stacks get different labels.
void labelHosts(std::vector<RankHealth>& table);

}  // namespace ccscope::launch
