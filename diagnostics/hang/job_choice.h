// Which job a process belongs to, and the choice among several jobs on one node: `ccscope
// hang` judges one job at a time.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "diagnostics/analyze/hang_snapshot.h"

namespace ccscope::diagnostics {

// What groups processes into one job: the rendezvous address (torchrun), the Slurm job and
// step, the PMIx namespace or the Open MPI job ("" when none is set).
std::string jobKey(const std::vector<std::pair<std::string, std::string>>& env);

// Whether `text` is in `key` ending where a word ends ("127.0.0.1:2950" names no job on port
// 29500).
bool namesJob(const std::string& key, const std::string& text);

// Keeps the processes of one job: the one `job` names, or the only one there is. False (with
// the jobs to choose from, processes cleared) when `job` names not exactly one, or several jobs
// run and neither `job` nor given pids chose one.
bool chooseJob(const std::string& job, bool pids_given, std::vector<HangProcess>& procs,
               std::vector<std::string>& choices);

}  // namespace ccscope::diagnostics
