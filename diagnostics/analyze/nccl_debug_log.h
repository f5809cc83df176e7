// The NCCL_DEBUG output of a rank that runs NCCL: routed to a file of the rank's own before its
// first NCCL call, and read back by the analyzer when the rank fails, so NCCL's own account
// (the interface it could not find, the peer it lost) joins the live diagnosis.
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "reports/diagnosis.h"

namespace ccscope::diagnostics {

// Where NCCL's debug output goes: `path` ("" where it stays on NCCL's stdout), and whether the
// file is ccscope's own (its name, which the rank may remove after a run that passed).
struct NcclDebugRoute {
  std::string path;
  bool ours = false;
};

// Before any thread reads the environment and before NCCL's first call: sets NCCL_DEBUG_FILE to
// DIR/ccscope-nccl-r<rank>-<pid>.log (DIR: CCSCOPE_DUMP_DIR, else /tmp), created here so that
// NCCL never falls back to stdout, and NCCL_DEBUG to INFO; each only where the environment has
// none. A NCCL_DEBUG_FILE set by the user is returned with its %h, %p and %% expanded as NCCL
// does. Where the file cannot be created nothing is set and `path` is "".
NcclDebugRoute routeNcclDebugOutput(int rank);

// NCCL_DEBUG_FILE's pattern expanded for this host and process ("%h": hostname to its first
// dot, "%p": pid, "%%": "%").
std::string expandNcclDebugFile(const std::string& pattern, const std::string& host, long pid);

// Where rank `rank`, process `pid` on `host`, has its NCCL log under the same environment:
// NCCL_DEBUG_FILE's pattern expanded where the operator set one, else ccscope's own file. What
// routeNcclDebugOutput chose in the rank, as the launcher that started it can work it out.
std::string ncclDebugPath(int rank, long pid, const std::string& host);

// The analyzer's verdict on one rank's NCCL log (the built-in rules); nullopt where the file is
// missing or empty, or the analyzer found nothing conclusive in it.
std::optional<reports::Diagnosis> diagnoseNcclLog(const std::string& path);

// The same on several ranks' logs read together, so that the culprit is named among them (the
// rank comes from ccscope's file name). Each distinct file counts once, and only if written at
// or after `not_before` (an old file of another job is not this job's). nullopt where fewer
// than two remain, or nothing is conclusive; `read` gets how many were read.
std::optional<reports::Diagnosis> diagnoseNcclLogs(const std::vector<std::string>& paths,
                                                   std::time_t not_before = 0,
                                                   size_t* read = nullptr);

}  // namespace ccscope::diagnostics
