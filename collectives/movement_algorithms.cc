// Registry rows of the data-movement collectives (allgather, reduce-scatter, all-to-all(v),
// broadcast, sendrecv). Filled as their schedules land.
#include "collectives/algorithms.h"

namespace ccscope::collectives {

std::span<const AlgorithmInfo> movementAlgorithms() { return {}; }

}  // namespace ccscope::collectives
