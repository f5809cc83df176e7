// NCCL point-to-point as a transport: one communicator per job (its unique id through our
// bootstrap), device buffers, every batch an ncclGroupStart/End of ncclSend/ncclRecv on the
// rank's stream (the compute backend's: stream-ordered, so the executor enqueues a whole
// collective in schedule order and waits once). A request finishes when the stream passes the
// event recorded after its group. NCCL's p2p calls carry no tags, and it can abort only the
// whole communicator: a cancel or an aborted peer ends every exchange (transports/README.md).
#pragma once

#include <memory>

#include "transports/transport.h"

namespace ccscope::transports {

// Errors at connect() when no GPU is usable or the NCCL loaded is not the one built against.
std::unique_ptr<Transport> makeNcclTransport(const TransportOptions& opts);

// Whether a rank could use NCCL here, before any starts: the library loaded at run time against
// the headers it was built with, then a visible GPU (kUnavailable with NCCL's or CUDA's reason).
core::Status ncclUsable();

// "2.28.9": the NCCL loaded at run time.
std::string ncclRuntimeVersion();

}  // namespace ccscope::transports
