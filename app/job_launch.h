// How a subcommand becomes a job: under mpirun/srun/torchrun-style environments this process is
// one rank; otherwise it becomes the local launcher and re-executes itself --np times.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "launch/environment.h"

namespace ccscope::app {

struct LaunchOptions {
  int np = 0;  // 0: a default from the core count
  double timeout_s = 60;
  std::string store;       // --store HOST:PORT
  std::string store_bind;  // --store-bind
  int store_port = -1;     // --store-port
};

bool launchedExternally();
// Returns the exit code: the rank's, or the launcher's (the most severe rank exit code).
int launchOrRun(const LaunchOptions& o, const std::vector<std::string>& argv,
                const std::function<int(const launch::LaunchInfo&)>& rank_main);

}  // namespace ccscope::app
