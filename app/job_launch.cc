#include "app/job_launch.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "app/command.h"
#include "core/affinity.h"
#include "core/log.h"
#include "core/units.h"
#include "launch/local_launcher.h"

namespace ccscope::app {

namespace {
// A barrier or a ring reduction keeps a few requests per peer in flight; the default table
// (16,384 slots, and as many per peer in shm's queues) would be memory for nothing.
constexpr uint32_t kHarnessRequestSlots = 1024;

int defaultLocalRanks() {
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores, 2, 8);
}
}  // namespace

core::Result<size_t> shmSingleCopyFromEnv() {
  const char* v = std::getenv("CCSCOPE_SHM_SINGLE_COPY_FROM");
  if (!v) return size_t{0};
  auto bytes = core::parseSize(v);
  if (!bytes || *bytes == 0)
    return core::Status(
        core::Code::kInvalidArgument,
        fmt::format("CCSCOPE_SHM_SINGLE_COPY_FROM='{}' is not a size (64K, 8192)", v));
  return static_cast<size_t>(*bytes);
}

transports::TransportOptions jobTransportOptions(const launch::LaunchInfo& info,
                                                 const launch::StoreClient& store,
                                                 const std::string& ifname, int tcp_streams,
                                                 int ranks_on_machine,
                                                 size_t shm_single_copy_from) {
  transports::TransportOptions to;
  // Oversubscription is of a machine's cores: the busiest machine's ranks, not the job's.
  to.local_ranks = ranks_on_machine > 0 ? ranks_on_machine : info.size;
  to.streams = tcp_streams;
  to.ifname = ifname;
  to.listen_host = ifname.empty() ? store.localAddress() : "";
  to.single_copy_from = shm_single_copy_from;
  return to;
}

HarnessTransport harnessTransport(const transports::TransportOptions& measured,
                                  const std::vector<std::string>& hosts) {
  const bool one_host =
      std::all_of(hosts.begin(), hosts.end(), [&](const std::string& h) { return h == hosts[0]; });
  HarnessTransport h{one_host ? "shm" : "tcp", {}};
  h.options.local_ranks = measured.local_ranks;
  h.options.ifname = measured.ifname;
  h.options.listen_host = measured.listen_host;
  h.options.request_slots = kHarnessRequestSlots;
  h.options.scope = "harness/";
  return h;
}

bool launchedExternally() {
  auto info = launch::detectLaunch(launch::currentEnvironment(), {});
  return info && info->source != launch::LaunchSource::kNone;
}

int launchOrRun(const LaunchOptions& o, const std::vector<std::string>& argv,
                const std::function<int(const launch::LaunchInfo&)>& rank_main) {
  launch::EnvOverrides ov{o.store, o.store_port};
  auto info = launch::detectLaunch(launch::currentEnvironment(), ov);
  if (!info) {
    std::fprintf(stderr, "ccscope: error: %s\n", info.status().message().c_str());
    return kExitUsage;
  }
  core::setupLogging(info->source == launch::LaunchSource::kNone ? -1 : info->rank);
  if (info->source != launch::LaunchSource::kNone) return rank_main(*info);
  launch::LocalLaunchOptions lo;
  lo.np = o.np == 0 ? defaultLocalRanks() : o.np;
  lo.op_timeout_s = o.timeout_s;
  if (o.store_port >= 0) lo.port = o.store_port;
  if (!o.store_bind.empty()) lo.bind_host = o.store_bind;
  std::vector<int> pids;
  lo.rank_pids = &pids;
  const std::time_t started = std::time(nullptr);
  auto rc = launch::runLocalRanks(lo, argv);
  if (!rc) {
    std::fprintf(stderr, "ccscope: error: %s\n", rc.status().message().c_str());
    return rc.status().code() == core::Code::kInvalidArgument ? kExitUsage : kExitFailed;
  }
  if (*rc != 0 && o.on_failed_job) o.on_failed_job(pids, started);
  return *rc;
}

void bindToCore(int local_rank) {
  auto cpus = core::allowedCpus();
  const int cpu = cpus ? core::cpuForLocalRank(*cpus, local_rank) : -1;
  core::Status s = cpus ? core::pinToCpu(cpu) : cpus.status();
  if (s.isOk())
    spdlog::info("--bind core: local rank {} pinned to CPU {} (of {} allowed)", local_rank, cpu,
                 cpus->size());
  else
    spdlog::warn("--bind core: not pinned: {}", s.toString());
}

}  // namespace ccscope::app
