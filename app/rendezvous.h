// Joining the job's rendezvous as one rank: rank 0 hosts the store under external launchers
// (address and token broadcast through MPI under mpirun when not given), every rank connects,
// presents the token and waits until all ranks joined.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "launch/environment.h"
#include "launch/host_identity.h"
#include "launch/store_client.h"
#include "launch/store_server.h"

namespace ccscope::app {

struct Rendezvous {
  std::unique_ptr<launch::StoreServer> server;  // rank 0 under external launchers
  std::unique_ptr<launch::StoreClient> client;
};

core::Status joinRendezvous(launch::LaunchInfo info, const std::string& store_bind,
                            double timeout_s, Rendezvous& rv);
// The rank hosting the store stays (briefly) until the other ranks stopped too, so that they
// can still ask it who failed instead of finding the store gone.
void lingerWhileOthersNeedTheStore(const Rendezvous& rv, int self);
// Every rank learns every rank's host label (launch/host_identity.h), through the store, and
// the most ranks any one machine runs (transports spin or sleep, and schedules size their
// segments, by that; the same on every rank, so ranks agree).
struct GatheredHosts {
  std::vector<std::string> labels;
  int most_on_one_machine = 1;
  launch::Crowding crowded;  // the machine whose ranks most outnumber its CPUs, if any
};
core::Result<GatheredHosts> gatherHosts(launch::StoreClient& c, double timeout_s);

}  // namespace ccscope::app
