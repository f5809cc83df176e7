// Connection set-up of the TCP transport: listen, publish the address through the bootstrap,
// then build a full mesh of `streams` connections per pair (the lower rank connects, the higher
// accepts), each opened by a verified hello. Runs once, off the data path.
#pragma once

#include <vector>

#include "core/deadline.h"
#include "core/status.h"
#include "launch/bootstrap.h"
#include "launch/socket_util.h"
#include "transports/transport.h"

namespace ccscope::transports {

// Where this rank listens and what it tells its peers. Precedence: opts.listen_host (the caller
// fills it with the address it uses to reach the store), then the IPv4 address of opts.ifname,
// then CCSCOPE_TCP_ADVERTISE (listening on 0.0.0.0), else 127.0.0.1 (single host).
struct TcpEndpoint {
  std::string bind_host;
  std::string advertise_host;
};
core::Result<TcpEndpoint> chooseTcpEndpoint(const TransportOptions& opts);

// Returns non-blocking, TCP_NODELAY sockets indexed [peer * streams + stream] (invalid for
// this rank's own entries). Every connect/accept is bounded by `deadline`; errors name the
// peer rank and its address. Publishes "tcp/addr/<rank>" = "host:port" for a process's first
// tcp transport and "tcp/<n>/addr/<rank>" for its n-th, so ranks that build transports in the
// same order never read a closed transport's address.
core::Result<std::vector<launch::Fd>> buildTcpMesh(launch::Bootstrap& bootstrap,
                                                   const TransportOptions& opts,
                                                   core::Deadline deadline);

}  // namespace ccscope::transports
