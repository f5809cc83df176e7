// ccscope: collective-communication benchmark and diagnostics. Subcommands live in
// app/<name>_command.cc; this file only dispatches and maps parse errors to exit code 2.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "app/bench_command.h"
#include "app/burnin_command.h"
#include "app/command.h"
#include "app/diagnose_command.h"
#include "app/info_command.h"
#include "app/model_command.h"
#include "app/pairs_command.h"
#include "app/report_command.h"
#ifdef CCSCOPE_HAVE_ANALYZE
#include "app/analyze_command.h"
#include "app/hang_command.h"
#endif

namespace {

int runCli(int argc, char** argv) {
  using namespace ccscope::app;
  std::vector<std::string> args(argv, argv + argc);
  CLI::App root("ccscope: collective-communication benchmark and diagnostics", "ccscope");
  root.require_subcommand(1);
  root.set_version_flag("--version", CCSCOPE_VERSION);
  std::vector<Command> commands;
  commands.push_back(addBenchCommand(root, args));
  commands.push_back(addInfoCommand(root));
  commands.push_back(addDiagnoseCommand(root, args));
  commands.push_back(addReportCommand(root));
  commands.push_back(addPairsCommand(root, args));
  commands.push_back(addBurninCommand(root, args));
  commands.push_back(addModelCommand(root));
#ifdef CCSCOPE_HAVE_ANALYZE
  commands.push_back(addAnalyzeCommand(root));
  commands.push_back(addHangCommand(root));
#endif
  try {
    root.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return root.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return root.exit(e);
  } catch (const CLI::Success& e) {
    return root.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "ccscope: error: %s (see ccscope --help)\n", e.what());
    return kExitUsage;
  }
  for (const Command& c : commands)
    if (c.sub->parsed()) return c.run();
  return kExitUsage;
}

}  // namespace

// Library errors come back as a Status; an exception reaching here is a bug, said in one line.
int main(int argc, char** argv) {
  try {
    return runCli(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ccscope: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "ccscope: internal error: an unknown exception\n");
  }
  return ccscope::app::kExitFailed;
}
