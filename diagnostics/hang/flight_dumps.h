// PyTorch Flight Recorder dumps of a running job: asked for through the pipe the job opted into
// (TORCH_NCCL_DEBUG_INFO_PIPE_FILE: one byte makes its heartbeat thread dump, training goes on)
// and read, pickle or JSON, from TORCH_FR_DUMP_TEMP_FILE (or TORCH_NCCL_DEBUG_INFO_TEMP_FILE,
// default /tmp/nccl_trace_rank_) + rank, with a dump written before the process started ignored.
#pragma once

#include <chrono>

#include "diagnostics/analyze/hang_snapshot.h"

namespace ccscope::diagnostics {

// Fills each process's fr_dump / fr_source and adds the "flight-recorder" source; with
// `trigger`, asks for fresh dumps and waits for them until `deadline`.
void readFlightRecorder(bool trigger, std::chrono::steady_clock::time_point deadline,
                        HangSnapshot& snap);

// Seconds after boot when a process started (0 when unknown): /proc/PID/stat's field 22.
double startAfterBoot(int pid);

}  // namespace ccscope::diagnostics
