#include "app/rendezvous.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <thread>

#include "app/run_metadata.h"
#include "launch/host_identity.h"
#ifdef CCSCOPE_HAVE_MPI
#include "collectives/baselines/mpi/mpi_runtime.h"
#endif

namespace ccscope::app {

using core::Code;
using core::Deadline;
using core::Layer;
using core::Status;
using launch::LaunchSource;

namespace {
constexpr double kStoreLingerSeconds = 10;
}

// External launchers: rank 0 hosts the store. Under mpirun without an explicit address, rank 0
// picks one (and the token) and broadcasts them through MPI.
Status joinRendezvous(launch::LaunchInfo info, const std::string& store_bind, double timeout_s,
                      Rendezvous& rv) {
  bool broadcast = info.source == LaunchSource::kOpenMpi;
#ifdef CCSCOPE_HAVE_MPI
  if (broadcast) CCSCOPE_RETURN_IF_ERROR(collectives::mpi::initialize());
#else
  if (broadcast && (info.store.empty() || info.token.empty()))
    return Status(Code::kUnavailable,
                  "started by mpirun but ccscope was built without MPI: set "
                  "CCSCOPE_STORE and CCSCOPE_JOB_TOKEN")
        .withLayer(Layer::kBootstrap);
  broadcast = false;
#endif
  if (info.rank == 0 && info.token.empty()) info.token = launch::generateJobToken();
  if (info.source != LaunchSource::kLocal && info.rank == 0) {
    std::string bind = store_bind.empty() ? "0.0.0.0" : store_bind;
    int port = 0;
    if (!info.store.empty()) {
      CCSCOPE_ASSIGN_OR_RETURN(launch::HostPort bind_hp, launch::parseHostPort(info.store));
      port = bind_hp.port;
    }
    CCSCOPE_ASSIGN_OR_RETURN(rv.server,
                             launch::StoreServer::start(bind, port, info.token, info.size));
    if (info.store.empty()) {
      const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
      bool one_host = local_size && std::atoi(local_size) == info.size;
      info.store = fmt::format("{}:{}", one_host ? "127.0.0.1" : hostName(), rv.server->port());
    }
  }
#ifdef CCSCOPE_HAVE_MPI
  if (broadcast) {
    CCSCOPE_RETURN_IF_ERROR(collectives::mpi::broadcastString(info.store));
    CCSCOPE_RETURN_IF_ERROR(collectives::mpi::broadcastString(info.token));
  }
#endif
  if (info.token.empty())
    return Status(Code::kInvalidArgument,
                  "no job token: set CCSCOPE_JOB_TOKEN to the same secret "
                  "on every rank")
        .withLayer(Layer::kBootstrap);
  if (info.token_is_weak && info.rank == 0)
    spdlog::warn("no CCSCOPE_JOB_TOKEN set: using a token derived from the job's public ids");
  CCSCOPE_ASSIGN_OR_RETURN(launch::HostPort hp, launch::parseHostPort(info.store));
  CCSCOPE_ASSIGN_OR_RETURN(rv.client,
                           launch::StoreClient::join(hp, info.token, info.rank, info.size,
                                                     Deadline::afterSeconds(timeout_s)));
  return Status::ok();
}

// The rank hosting the store stays (briefly) until the other ranks stopped too, so that they
// can still ask it who failed instead of finding the store gone.
void lingerWhileOthersNeedTheStore(const Rendezvous& rv, int self) {
  if (!rv.server) return;
  Deadline limit = Deadline::afterSeconds(kStoreLingerSeconds);
  while (!limit.expired()) {
    bool someone_alive = false;
    for (const auto& h : rv.server->health())
      someone_alive |= h.rank != self && h.state == launch::RankState::kAlive;
    if (!someone_alive) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Every rank learns every rank's host label (launch/host_identity.h): a cut-off host names its
// own ranks, and two hosts with one hostname stay two.
core::Result<GatheredHosts> gatherHosts(launch::StoreClient& c, double timeout_s) {
  launch::HostIdentity self = launch::localHostIdentity();
  self.addr = c.localAddress();
  CCSCOPE_RETURN_IF_ERROR(
      c.put(fmt::format("host/{}", c.rank()), launch::encodeHostIdentity(self)));
  std::vector<launch::HostIdentity> ids;
  for (int r = 0; r < c.size(); ++r) {
    CCSCOPE_ASSIGN_OR_RETURN(
        std::string h, c.get(fmt::format("host/{}", r), core::Deadline::afterSeconds(timeout_s)));
    ids.push_back(launch::decodeHostIdentity(h));
  }
  return GatheredHosts{launch::hostLabels(ids), launch::mostRanksOnOneMachine(ids),
                       launch::mostCrowdedMachine(ids)};
}

}  // namespace ccscope::app
