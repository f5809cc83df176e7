// The sentences both sides of a pair report when they disagree, the same for every transport
// (docs/architecture.md, "Transport contract": errors as Status).
#pragma once

#include <cstdint>

#include "core/status.h"

namespace ccscope::transports {

// "rank 1 expected tag 0x12 from rank 0 but got 0x13: ranks disagree on the collective".
core::Status tagMismatchStatus(int receiver, int sender, uint32_t expected, uint32_t got);
// "rank 0 sent 1000 B but rank 1 expected at most 100 B: ..."; sent 0: the size is unknown
// (the receiver saw only that it did not fit).
core::Status tooLongStatus(int receiver, int sender, uint64_t sent, uint64_t room);

}  // namespace ccscope::transports
