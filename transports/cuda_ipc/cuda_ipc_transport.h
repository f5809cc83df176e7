// CUDA-IPC transport for ranks on one node: device buffers move device to device. The sender
// announces each message with the CUDA IPC handle of its buffer; the receiver opens it (once per
// allocation), copies out of it on a stream of its own, and answers only once an event of its
// own recorded after the copy completed; the send completes on that answer (the read mode of
// NCCL's P2P transport). Announcements and answers travel over an shm transport of its own
// (small host messages, FIFO per peer), which also gives the per-peer order, the tag check and
// the notice that a peer process exited.
#pragma once

#include <memory>

#include "transports/transport.h"

namespace ccscope::transports {

// Errors at connect() when no GPU is usable (kUnavailable, CUDA's own reason).
std::unique_ptr<Transport> makeCudaIpcTransport(const TransportOptions& opts);

}  // namespace ccscope::transports
