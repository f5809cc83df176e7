// The library-initialisation probe of `ccscope diagnose` (library layer). Every rank
// initialises UCX (and NCCL where a GPU is usable) in a helper child process under the probe
// deadline, with the library's log turned up; the log goes through the offline analyzer's rule
// set (diagnostics/rules/*.toml), so a misconfiguration is named the way `ccscope analyze` would
// name it. MPI is checked in-process: under mpirun it is already initialised.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "diagnostics/live/child_process.h"
#include "diagnostics/live/probes.h"
#include "reports/diagnosis.h"

namespace ccscope::diagnostics {

// What the helper prints besides the library's own log ("ccscope-init: version 1.13.1",
// "... transports tcp/eth0 posix/memory", "... error: ucp_init: No such device", "... ok").
inline constexpr const char* kInitLinePrefix = "ccscope-init:";

enum class MpiState { kNotLaunched, kUp, kDown, kNotCompiled };

struct LibraryInitContext {
  std::vector<std::string> child_command;  // the helper; "ucx" or "nccl:DEVICE" is appended
  double timeout_s = 5;
  bool gpu_usable = false;
  int local_rank = 0;  // picks the GPU
  MpiState mpi = MpiState::kNotLaunched;
  std::string mpi_version;
};

// One library on one rank.
struct InitCheck {
  ProbeOutcome outcome = ProbeOutcome::kSkip;
  std::string detail;
  std::vector<std::string> evidence;
  std::string next_step;
  std::string version;
  std::vector<std::string> transports;
};
nlohmann::json toJson(const InitCheck& c);
InitCheck initCheckFromJson(const nlohmann::json& j);

// Every rank: {"ucx": InitCheck, "nccl": ..., "mpi": ...} as JSON.
nlohmann::json runLibraryInit(const LibraryInitContext& ctx);

// The verdict on one helper run, given what the analyzer made of its output (nullptr: the rule
// set is not built in). A library-layer root finding fails it with that finding's verdict and
// evidence; so does a helper that failed, crashed or was killed at the deadline. Pure.
InitCheck judgeInitRun(const std::string& library, const ChildRun& run,
                       const reports::Diagnosis* analysis);
InitCheck judgeMpi(MpiState state, const std::string& version);

// The analyzer's diagnosis of a captured log (std::nullopt when built without the rule set).
std::optional<reports::Diagnosis> analyzeLog(const std::vector<std::string>& lines,
                                             const std::string& name);

// Rank 0: one result per library ("ucx init", "nccl init", "mpi init") from every rank's checks.
std::vector<ProbeResult> judgeLibraryInit(const std::vector<nlohmann::json>& per_rank,
                                          const std::vector<std::string>& hosts);

// The helper's side: "ucx" or "nccl:DEVICE"; returns its exit code (5: not compiled in).
int runLibraryInitChild(const std::string& what);
int ucxInitChild();
int ncclInitChild(int device);

}  // namespace ccscope::diagnostics
