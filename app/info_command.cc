#include "app/info_command.h"

#include <fmt/format.h>

#include "app/run_metadata.h"
#include "transports/component_report.h"
#include "transports/transport.h"
#ifdef CCSCOPE_HAVE_MPI
#include "collectives/baselines/mpi/mpi_runtime.h"
#endif

namespace ccscope::app {

static int runInfo() {
  fmt::print("ccscope {} on {}\n", CCSCOPE_VERSION, hostName());
  fmt::print("transports built in: {}", transports::transportNames());
#ifdef CCSCOPE_HAVE_MPI
  fmt::print(", mpi (baseline: --transport mpi --algo native)\n");
  fmt::print("  mpi: {}\n", collectives::mpi::libraryVersion());
#else
  fmt::print("\n  mpi: not compiled in (libopenmpi-dev not found at build time)\n");
#endif
  fmt::print("optional components:\n");
  for (const auto& c : transports::probeComponents()) {
    fmt::print("  {:6} {}{}\n", c.name, c.compiled ? "compiled in" : "absent",
               c.version.empty() ? "" : fmt::format(", version {}", c.version));
    for (const auto& d : c.devices) fmt::print("         device: {}\n", d);
    if (!c.note.empty()) fmt::print("         {}\n", c.note);
  }
  return kExitOk;
}

Command addInfoCommand(CLI::App& root) {
  CLI::App* sub = root.add_subcommand("info", "Transports, libraries and devices found");
  return {sub, runInfo};
}

}  // namespace ccscope::app
