// TCP transport: non-blocking sockets and epoll, a full mesh of `streams` connections per peer;
// large messages are striped across the streams.
#pragma once

#include <memory>

#include "transports/transport.h"

namespace ccscope::transports {

std::unique_ptr<Transport> makeTcpTransport(const TransportOptions& opts);

}  // namespace ccscope::transports
