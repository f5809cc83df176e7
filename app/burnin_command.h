// `ccscope burnin --profile FILE.toml`: preflight, pairs, sweeps, soak and congestion with one
// verdict per host and per link (docs/burnin.md).
#pragma once

#include <string>
#include <vector>

#include "app/command.h"

namespace ccscope::app {

Command addBurninCommand(CLI::App& root, const std::vector<std::string>& argv);

}  // namespace ccscope::app
