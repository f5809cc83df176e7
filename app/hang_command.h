// `ccscope hang`: triage of a running, hung job on this node, read-only: its processes, NCCL
// RAS, py-spy stacks, Flight Recorder dumps, NVML and the kernel log, judged by the analyzer
// (docs/diagnosis.md, "A live hang: ccscope hang").
#pragma once

#include <CLI/CLI.hpp>

#include "app/command.h"

namespace ccscope::app {

// run() returns 3 when a verdict names the layer of the hang, 1 when what was read is not
// conclusive, 5 when there is nothing to examine (no job process, no RAS), 2 for bad arguments.
Command addHangCommand(CLI::App& root);

}  // namespace ccscope::app
