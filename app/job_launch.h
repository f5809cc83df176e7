// How a subcommand becomes a job: under mpirun/srun/torchrun-style environments this process is
// one rank; otherwise it becomes the local launcher and re-executes itself --np times.
#pragma once

#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "launch/environment.h"
#include "launch/store_client.h"
#include "transports/transport.h"

namespace ccscope::app {

struct LaunchOptions {
  int np = 0;  // 0: a default from the core count
  double timeout_s = 60;
  std::string store;       // --store HOST:PORT
  std::string store_bind;  // --store-bind
  int store_port = -1;     // --store-port
  // As the local launcher: called with the ranks' pids (by rank) and the time the ranks were
  // started when the job failed.
  std::function<void(const std::vector<int>& rank_pids, std::time_t started)> on_failed_job;
};

bool launchedExternally();
// $CCSCOPE_SHM_SINGLE_COPY_FROM: from which message size the shm transport moves a message by
// one process_vm_readv instead of through its ring's slots. 0 when unset (the transport's own
// threshold); an error naming the value when it is not a size above 0. bench and diagnose both
// read it before any rank starts.
core::Result<size_t> shmSingleCopyFromEnv();
// The options a rank of a bench or diagnose job makes its transports with: the interface
// (--ifname, or else the address that reaches the store), tcp streams per peer, how many ranks
// the busiest machine runs (gatherHosts; 0: unknown, the whole job), and the shm single-copy
// threshold asked for (0: the transport's own).
transports::TransportOptions jobTransportOptions(const launch::LaunchInfo& info,
                                                 const launch::StoreClient& store,
                                                 const std::string& ifname, int tcp_streams,
                                                 int ranks_on_machine, size_t shm_single_copy_from);
// The host transport of the harness's own channel (collectives/harness_channel.h): shm when
// every rank of the job runs on one host (`hosts`, one per rank, as every rank gathered them),
// else tcp where the measured transport listens; its bootstrap keys and /dev/shm names carry the
// scope "harness/", so that it connects beside a measured transport of the same kind.
struct HarnessTransport {
  std::string name;
  transports::TransportOptions options;
};
HarnessTransport harnessTransport(const transports::TransportOptions& measured,
                                  const std::vector<std::string>& hosts);
// Returns the exit code: the rank's, or the launcher's (the most severe rank exit code).
int launchOrRun(const LaunchOptions& o, const std::vector<std::string>& argv,
                const std::function<int(const launch::LaunchInfo&)>& rank_main);

// --bind core: local rank r on the r-th CPU this process may use; a failure only warns.
void bindToCore(int local_rank);

}  // namespace ccscope::app
