#include "launch/rank_health.h"

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

}  // namespace ccscope::launch
