// WorldTracker: processes that each report being rank 0 of a world of one ("process 0 of 1")
// after a launcher line that started several. An MPI program built against one MPI and started
// by another MPI's launcher initialises as a singleton in every process: a root cause of its
// own, seen only across lines, since each line alone is a healthy one-process run.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/analyze/event.h"

namespace ccscope::diagnostics {

class WorldTracker {
 public:
  // A line that may say "rank 0 of 1" (singleton keywords).
  void parseSingleton(std::string_view body, const reports::Evidence& where);
  // A line that may start processes (mpirun, mpiexec, srun ... -n N).
  void parseLaunch(std::string_view body, const reports::Evidence& where);
  // One event when a singleton followed a launch of several in the same file (none otherwise).
  std::vector<Event> conclude() const;

 private:
  std::string launch_file_;  // the file of the latest launch line, and how many it started
  int launched_ = 0;
  reports::Evidence launch_;
  int singletons_ = 0;  // singleton lines after a launch of several, in its file
  int most_launched_ = 0;
  std::vector<reports::Evidence> evidence_;  // the first launch, then the first singletons
};

// How many processes a launcher command line asks for; 0 when the line is not one. Exposed for
// tests.
int launchedProcesses(std::string_view body);

const FindingSpec& singletonWorldsSpec();

}  // namespace ccscope::diagnostics
