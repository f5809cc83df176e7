// Running `ccscope bench` as one rank of a job: join the rendezvous (hosting it on rank 0 when
// an external launcher started us), connect the transport, build the backend, sweep, and turn
// failures into a report naming the rank that stopped answering.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/bench_config.h"
#include "collectives/collective_backend.h"
#include "collectives/harness_channel.h"
#include "launch/environment.h"
#include "launch/store_client.h"
#include "reports/report_set.h"
#include "transports/transport.h"

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

// Passes everything to several sinks (rank 0: table, progress, records, JSON Lines).
struct Fanout : reports::ResultSink {
  std::vector<reports::ResultSink*> sinks;
  void onRun(const reports::RunMetadata& m) override {
    for (auto* s : sinks) s->onRun(m);
  }
  void onSection(const std::string& t) override {
    for (auto* s : sinks) s->onSection(t);
  }
  void onMeasurement(const reports::Measurement& m) override {
    for (auto* s : sinks) s->onMeasurement(m);
  }
  void onProgress(int d, int t, double e) override {
    for (auto* s : sinks) s->onProgress(d, t, e);
  }
  void onEnd(const reports::RunSummary& r) override {
    for (auto* s : sinks) s->onEnd(r);
  }
};

// One algorithm over `t` (or MPI's own with --transport mpi --algo native), staged through the
// host when the buffers are on a device the transport cannot move.
core::Result<std::unique_ptr<collectives::CollectiveBackend>> makeBackend(
    const std::string& algo, transports::Transport* t, collectives::HarnessChannel* harness,
    const bench::BenchConfig& cfg, collectives::DeviceRuntime* device);
// The harness's own channel (barriers, statistics) beside the measured transport.
core::Result<std::unique_ptr<collectives::HarnessChannel>> connectHarness(
    const transports::TransportOptions& measured, const std::vector<std::string>& hosts,
    launch::StoreClient& client, double timeout_s);

// Returns the process exit code (docs/architecture.md, "Exit codes").
int runBenchRank(const bench::BenchConfig& cfg, const JobOptions& opts,
                 const launch::LaunchInfo& info);

}  // namespace ccscope::app
