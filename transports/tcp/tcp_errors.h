// How the TCP transport words its failures: one place, so both sides of a disagreement read
// the same sentence and every error names the ranks involved.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "transports/tcp/tcp_wire.h"

namespace ccscope::transports {

// `receiver` posted a receive with tag `expected`, the message from `sender` carried `got`.
core::Status tcpTagMismatch(core::Code code, int receiver, int sender, uint64_t expected,
                            uint32_t got);
// The message is longer than the posted receive; `len` == UINT64_MAX when unknown.
core::Status tcpTooLong(core::Code code, int receiver, int sender, uint64_t posted, uint32_t tag,
                        uint64_t len);
// What the abort frame `h` from `peer` means to `self`, the sender of the refused message.
core::Status tcpRemoteAbort(int self, int peer, const TcpFrameHeader& h);
// EOF (err == 0) or a socket error on the connection from `self` to `peer`.
core::Status tcpConnectionError(int self, int peer, const char* call, int err);
// A frame that cannot be where it is: the byte stream lost its framing.
core::Status tcpDesync(int peer, int stream, const TcpFrameHeader& h);

}  // namespace ccscope::transports
