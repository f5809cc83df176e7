// What a rank does when its run fails: map the status to an exit code, and for hangs ask the
// store for every rank's state and progress, diagnose (diagnostics/live), print the verdict,
// dump the flight recorder, and append the diagnosis to the JSON Lines file (rank 0).
#pragma once

#include <ctime>
#include <string>
#include <vector>

#include "core/flight_record.h"
#include "core/status.h"
#include "launch/store_client.h"
#include "reports/jsonl_writer.h"

namespace ccscope::app {

struct FailureContext {
  int rank = 0;
  std::string host;
  launch::StoreClient* client = nullptr;  // null before the rendezvous
  const core::FlightRecorder* recorder = nullptr;
  reports::JsonLinesWriter* json = nullptr;  // rank 0's results file, if any
  std::string json_path;                     // rank 0's --json, opened on demand
  std::vector<std::string> hosts;            // per rank, once known
  std::string store_host;                    // the rendezvous address, when known
  int local_rank = 0, local_size = 0;        // this host's ranks, from the launcher
  std::string nccl_log{};                    // this rank's NCCL_DEBUG_FILE, where it runs NCCL
};

// The context of a rank of a job that joined its rendezvous (client may still be null) and knows
// its hosts (empty before), with rank 0's JSON Lines file.
FailureContext jobFailureContext(int rank, int local_rank, int local_size,
                                 launch::StoreClient* client, const std::vector<std::string>& hosts,
                                 reports::JsonLinesWriter* json, const std::string& json_path);

int exitCodeFor(const core::Status& s);
// Prints the failure (and the diagnosis for hangs, then the analyzer's on this rank's NCCL log,
// if any); returns the exit code.
int reportFailure(const core::Status& s, const FailureContext& ctx);

// As the local launcher of a failed NCCL job: the analyzer's verdict on every rank's NCCL log
// read together (each rank reads only its own), on stderr.
void reportNcclLogsOfJob(const std::vector<int>& rank_pids, std::time_t started);

}  // namespace ccscope::app
