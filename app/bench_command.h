// `ccscope bench <collective> ...`: options -> BenchConfig, then run as a rank, or start local
// ranks with --np when no launcher is around.
#pragma once

#include <string>
#include <vector>

#include "app/command.h"

namespace ccscope::app {

Command addBenchCommand(CLI::App& root, const std::vector<std::string>& argv);

}  // namespace ccscope::app
