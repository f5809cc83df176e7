// Shared-memory transport for ranks on one host: a segment per rank holding inbound slot rings
// (small messages copied inline) and a futex doorbell; large messages move single-copy with
// process_vm_readv straight from the sender's buffer.
#pragma once

#include <memory>

#include "transports/transport.h"

namespace ccscope::transports {

std::unique_ptr<Transport> makeShmTransport(const TransportOptions& opts);

}  // namespace ccscope::transports
