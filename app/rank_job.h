// Running `ccscope bench` as one rank of a job: join the rendezvous (hosting it on rank 0 when
// an external launcher started us), connect the transport, build the backend, sweep, and turn
// failures into a report naming the rank that stopped answering.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_config.h"
#include "launch/environment.h"
#include "reports/report_set.h"

namespace ccscope::app {

struct JobOptions {
  std::string json_path;
  reports::ReportOptions report;  // --html/--md/--csv/--junit/--baseline, thresholds
  std::string store_bind;         // where rank 0 binds the store (external launchers)
  std::string ifname;             // tcp: interface to use
  int tcp_streams = 1;
  // shm: messages from this size go by one process_vm_readv instead of through the ring's
  // slots ($CCSCOPE_SHM_SINGLE_COPY_FROM; 0 = the transport's own threshold).
  size_t shm_single_copy_from = 0;
  bool bind_core = false;  // --bind core: local rank r on the r-th allowed CPU (core/affinity.h)
  std::string rdma_dev;    // verbs: --rdma-dev DEVICE[:PORT] ("" = the first active port)
  int gid_index = -1;      // verbs: --gid-index (-1 = the first RoCE v2 GID)
  bool ucx_peer_errors = true;  // ucx: --ucx-errors peer (true) or none
  std::vector<std::string> argv;
};

// Returns the process exit code (docs/architecture.md, "Exit codes").
int runBenchRank(const bench::BenchConfig& cfg, const JobOptions& opts,
                 const launch::LaunchInfo& info);

}  // namespace ccscope::app
