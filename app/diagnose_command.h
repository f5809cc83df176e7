// `ccscope diagnose`: layer-by-layer probes of the job (bootstrap, host network, RDMA, GPU,
// library, then a small collective per transport); the first failing layer is the verdict.
#pragma once

#include <string>
#include <vector>

#include "app/command.h"

namespace ccscope::app {

Command addDiagnoseCommand(CLI::App& root, const std::vector<std::string>& argv);

}  // namespace ccscope::app
