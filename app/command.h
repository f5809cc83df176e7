// A subcommand as the CLI sees it: the CLI11 node it registered and what running it means.
// Each subcommand lives in its own app/<name>_command.cc and returns an exit code
// (docs/architecture.md, "Exit codes").
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace ccscope::app {

struct Command {
  CLI::App* sub = nullptr;
  std::function<int()> run;
};

// Exit codes of every ccscope command (docs/architecture.md, "Exit codes").
enum ExitCode : int {
  kExitOk = 0,
  kExitFailed = 1,        // a threshold, baseline or diagnosis failed
  kExitUsage = 2,         // usage or configuration error
  kExitHang = 3,          // hang or timeout detected
  kExitWrongResults = 4,  // results checked wrong
  kExitMissing = 5,       // a required device or library is missing
};

}  // namespace ccscope::app
