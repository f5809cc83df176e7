// WorldTracker: processes that each report being rank 0 of a world of one ("process 0 of 1")
// where a launcher started several. An MPI program built against one MPI and started by another
// MPI's launcher initialises as a singleton in every process: a root cause of its own, seen only
// across lines, since each line alone is a healthy one-process run.
#pragma once

#include <string_view>
#include <vector>

#include "diagnostics/analyze/event.h"

namespace ccscope::diagnostics {

class WorldTracker {
 public:
  // A line that may say "rank 0 of 1" or start processes (mpirun, mpiexec, srun -n N).
  void parseLine(std::string_view body, const reports::Evidence& where);
  // One event when several processes were singletons (none otherwise).
  std::vector<Event> conclude() const;

 private:
  int singletons_ = 0;
  std::vector<reports::Evidence> evidence_;  // the first singleton lines and the launch
  int most_launched_ = 0;                    // the most processes one launcher line asked for
  bool launched_one_ = false;                // a launcher line asked for one process
  bool launch_kept_ = false;
};

const FindingSpec& singletonWorldsSpec();

}  // namespace ccscope::diagnostics
