// RC verbs transport: one reliable-connected QP per peer; small messages go eagerly into a
// registered receive ring under credit flow control, large ones by rendezvous (the receiver
// advertises address and rkey, the sender does RDMA WRITE with immediate). Protocol and what is
// verified without a device: transports/README.md, "verbs".
#pragma once

#include <memory>

#include "core/status.h"
#include "transports/transport.h"

namespace ccscope::transports {

// connect() fails with verbsUsable()'s status where there is no device.
std::unique_ptr<Transport> makeVerbsTransport(const TransportOptions& opts);
// kUnavailable, layer rdma, when ibv_get_device_list finds no device: asked before ranks start.
core::Status verbsUsable();

}  // namespace ccscope::transports
