// `ccscope analyze`: offline decomposition of a failed job's logs from all ranks into the
// failing layer, culprit ranks/hosts/links, evidence and next step (docs/architecture.md,
// "Diagnosis layers").
#pragma once

#include <CLI/CLI.hpp>

#include "app/command.h"

namespace ccscope::app {

// Registers the subcommand; run() returns 0 when a diagnosis was made, 1 when nothing
// conclusive was found, 2 for bad input or bad rules.
Command addAnalyzeCommand(CLI::App& root);

}  // namespace ccscope::app
