// TCP transport: non-blocking sockets and one epoll set, a full mesh of `streams` connections
// per pair. Each message part is a 16-byte frame header {tag, kind, message length} followed by
// the payload, read straight into the posted buffer; a peer's sockets are read only while a
// receive from it is posted (no unexpected-message buffering, no allocation on the data path).
// Messages of at least kTcpStripeMinBytes are striped over all streams, shorter ones use stream 0.
// A tag or length disagreement fails the pair on both sides (the receiver sends an abort frame).
//
// Addressing: the rank listens on opts.listen_host (the caller fills it with the address it uses
// to reach the rendezvous store), else on the IPv4 address of opts.ifname, else on 0.0.0.0
// advertising $CCSCOPE_TCP_ADVERTISE, else on 127.0.0.1 (one host only). See tcp_mesh.h.
#pragma once

#include <memory>

#include "transports/transport.h"

namespace ccscope::transports {

std::unique_ptr<Transport> makeTcpTransport(const TransportOptions& opts);

}  // namespace ccscope::transports
