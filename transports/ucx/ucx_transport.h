// UCX transport (UCP tag matching): one context and worker per rank, endpoints in peer
// error-handling mode, messages matched per peer in posting order with the collective's tag
// checked on arrival, waits on the worker's event fd. transports/README.md, "ucx", has the
// protocol and UCX 1.13's limits.
#pragma once

#include <memory>

#include "transports/transport.h"

namespace ccscope::transports {

std::unique_ptr<Transport> makeUcxTransport(const TransportOptions& opts);

}  // namespace ccscope::transports
