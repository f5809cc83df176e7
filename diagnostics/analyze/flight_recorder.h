// Reads PyTorch Flight Recorder dumps in JSON (TORCH_NCCL_DUMP_ON_TIMEOUT with the JSON dumper,
// or the same structure written by other tools): per-rank pg_status (last enqueued/completed
// collective) and the recorded entries (which collective each sequence number was), fed into the
// ProgressTracker for the cross-rank comparison.
#pragma once

#include <string>
#include <string_view>

#include "diagnostics/analyze/progress_tracker.h"

namespace ccscope::diagnostics {

// Largest JSON document parsed as a whole; bigger files are only read line by line.
inline constexpr size_t kMaxJsonDocumentBytes = 64u << 20;

// True when `text` is a Flight Recorder dump (it was then fed to `tracker`).
bool parseFlightRecorderDump(std::string_view text, int rank_hint, const std::string& file,
                             ProgressTracker& tracker);

}  // namespace ccscope::diagnostics
