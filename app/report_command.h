// `ccscope report RESULTS.jsonl... [--html F] [--md F] [--csv F] [--junit F] [--baseline B.jsonl
// --tolerance 10%] [--min-busbw SIZE=GBPS,...] [--max-lat SIZE=US,...]`: renders results read
// back from JSON Lines and gives the verdict. Exit 0 passed; 1 wrong results, a limit or a
// baseline regression; 2 bad input (unreadable file, malformed line: file:line) or usage.
#pragma once

#include "app/command.h"

namespace ccscope::app {

Command addReportCommand(CLI::App& root);

}  // namespace ccscope::app
