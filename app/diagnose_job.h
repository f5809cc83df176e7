// One rank's part of `ccscope diagnose`; rank 0 gathers every rank's findings and reports.
#pragma once

#include <string>

#include "diagnostics/live/probes.h"
#include "launch/environment.h"

namespace ccscope::app {

struct DiagnoseOptions {
  diagnostics::ProbeOptions probe;
  std::string json_path;
  std::string store_bind;
  size_t shm_single_copy_from = 0;  // $CCSCOPE_SHM_SINGLE_COPY_FROM, as for bench (0: shm's own)
};

int runDiagnoseRank(const DiagnoseOptions& o, const launch::LaunchInfo& info);

}  // namespace ccscope::app
