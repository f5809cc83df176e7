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
};

int runDiagnoseRank(const DiagnoseOptions& o, const launch::LaunchInfo& info);

}  // namespace ccscope::app
