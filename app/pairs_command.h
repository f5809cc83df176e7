// `ccscope pairs`: the link matrix of a job (docs/burnin.md).
#pragma once

#include <string>
#include <vector>

#include "app/command.h"

namespace ccscope::app {

Command addPairsCommand(CLI::App& root, const std::vector<std::string>& argv);

}  // namespace ccscope::app
