// bench's options for NCCL's own collectives (--transport nccl --algo native), by nccl-tests'
// letters: -R buffer registration, -G CUDA-graph launches, -z blocking.
#pragma once

#include <CLI/CLI.hpp>

#include "bench/bench_config.h"
#include "core/status.h"

namespace ccscope::app {

struct NcclModeOptions {
  int nccl_register = 0;
  int graph_launches = 0;
  int blocking = 2;
};

void addNcclModeOptions(CLI::App& b, NcclModeOptions& raw);
// Checks the values and that they are given where they apply, into c (after the transport and
// the algorithms are parsed).
core::Status parseNcclModes(const NcclModeOptions& r, bench::BenchConfig& c);

}  // namespace ccscope::app
