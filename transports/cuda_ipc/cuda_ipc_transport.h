// CUDA-IPC transport for ranks on one node: device buffers move device to device. The sender
// announces each message with the CUDA IPC handle of its buffer; the receiver opens it (once per
// allocation), copies out of it on a stream of its own, and records an interprocess event the
// sender waits on before its buffer is its own again: the read mode of NCCL's P2P transport.
// Announcements and acknowledgements travel over an shm transport of its own (small host
// messages, FIFO per peer), which also gives the per-peer order and the tag check.
#pragma once

#include <memory>

#include "transports/transport.h"

namespace ccscope::transports {

// Errors at connect() when no GPU is usable (kUnavailable, CUDA's own reason).
std::unique_ptr<Transport> makeCudaIpcTransport(const TransportOptions& opts);

}  // namespace ccscope::transports
