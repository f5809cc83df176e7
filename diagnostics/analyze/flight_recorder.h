// Reads PyTorch Flight Recorder dumps, as the pickle PyTorch writes by default on a watchdog
// timeout (TORCH_NCCL_DUMP_ON_TIMEOUT, decoded by pickle_reader without Python) or as JSON (the
// JSON dumper, or the same structure written by other tools): per-rank pg_status (last
// enqueued/completed collective) and the recorded entries (which collective each sequence number
// was), fed into the ProgressTracker for the cross-rank comparison.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "diagnostics/analyze/progress_tracker.h"

namespace ccscope::diagnostics {

// Largest JSON document parsed as a whole; bigger files are only read line by line.
inline constexpr size_t kMaxJsonDocumentBytes = 64u << 20;

// True when `text` is a Flight Recorder dump (it was then fed to `tracker`).
bool parseFlightRecorderDump(std::string_view text, int rank_hint, const std::string& file,
                             ProgressTracker& tracker);

// The same for a dump already parsed (as `ccscope hang` stores it in its snapshot).
bool feedFlightRecorderDump(const nlohmann::json& doc, int rank_hint, const std::string& file,
                            ProgressTracker& tracker);

// False when `path` is not a pickle (it does not start with PROTO 2-5; "-" is never one): read it
// as text. Otherwise the pickle was read whole: fed to `tracker` when it decodes to a Flight
// Recorder dump (the rank from the dump, else `rank_hint`), with `note` saying why it was not
// used or which of its strs had to be repaired.
bool readPickledFlightRecorder(const std::string& path, int rank_hint, ProgressTracker& tracker,
                               std::string& note);

}  // namespace ccscope::diagnostics
