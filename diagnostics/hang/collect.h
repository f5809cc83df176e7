// `ccscope hang`'s reading of one node: the job's processes (/proc), NCCL RAS, py-spy stacks,
// Flight Recorder dumps (triggered through the job's pipe only where the job opted in), NVML's
// per-process GPU use and the kernel log, all within one timeout and without signalling,
// pausing or attaching to the job. Every source is listed with whether it could be read.
#pragma once

#include <string>
#include <vector>

#include "diagnostics/analyze/hang_snapshot.h"

namespace ccscope::diagnostics {

struct HangOptions {
  std::vector<int> pids;   // these processes (empty: find the job's processes)
  std::string job;         // the job whose key holds this text, where several run here
  std::string ras;         // HOST:PORT; "" from the job's NCCL_RAS_ADDR or the default; "off"
  double timeout_s = 10;   // everything, RAS's job-wide report included
  std::string kernel_log;  // "" reads /dev/kmsg; a file of dmesg text; "off"
  bool trigger_flight_recorder = true;  // write to TORCH_NCCL_DEBUG_INFO_PIPE_FILE's pipe
  std::string py_spy = "py-spy";        // program name or path; "off"
  double sample_s = 0.5;                // CPU and GPU use are measured over this interval
};

// What could not be read is in the snapshot's sources; the one error is a choice to make
// (kInvalidArgument): several jobs run on this node and neither --job nor --pid chose one, or
// --job matched none.
core::Result<HangSnapshot> collectHang(const HangOptions& opt);

// True when the snapshot holds something to judge (a process of a job, a RAS report, kernel
// log lines).
bool hasEvidence(const HangSnapshot& s);

}  // namespace ccscope::diagnostics
