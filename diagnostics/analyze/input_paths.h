// Expands the operator's input arguments (files, directories searched recursively, glob
// patterns, "-" for standard input) into the list of inputs to read, in a stable order.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace ccscope::diagnostics {

// An argument that names nothing readable (missing path, glob matching nothing, unreadable
// directory) is an invalid-argument error naming it.
core::Result<std::vector<std::string>> expandInputs(const std::vector<std::string>& args);

// The rank encoded in a log file's name ("rank_12.log", "rank3.host.out", "worker-7.log"),
// or -1 when the name does not say.
int rankFromFileName(const std::string& path);

}  // namespace ccscope::diagnostics
