#include "transports/tcp/tcp_errors.h"

#include <fmt/format.h>

#include <cerrno>
#include <string>

namespace ccscope::transports {

using core::Code;
using core::Layer;
using core::Status;

Status tcpTagMismatch(Code code, int receiver, int sender, uint64_t expected, uint32_t got) {
  return Status(code, fmt::format("rank {} expected tag {:#x} from rank {} but got {:#x}: ranks "
                                  "disagree on the collective",
                                  receiver, expected, sender, got))
      .withLayer(Layer::kApplication);
}

Status tcpTooLong(Code code, int receiver, int sender, uint64_t posted, uint32_t tag,
                  uint64_t len) {
  std::string size = len == UINT64_MAX ? "longer" : fmt::format("{} B", len);
  return Status(code, fmt::format("rank {} posted a receive of {} B from rank {} but the message "
                                  "(tag {:#x}) is {}: ranks disagree on the message size",
                                  receiver, posted, sender, tag, size))
      .withLayer(Layer::kApplication);
}

Status tcpRemoteAbort(int self, int peer, const TcpFrameHeader& h) {
  if (h.kind == TcpFrameKind::kAbortPeer)
    return Status(Code::kAborted,
                  fmt::format("rank {} aborted its exchanges with rank {}", peer, self))
        .withLayer(Layer::kApplication)
        .withPeer(peer);
  Status st = h.kind == TcpFrameKind::kAbortTag
                  ? tcpTagMismatch(Code::kRemoteError, peer, self, h.len, h.tag)
                  : tcpTooLong(Code::kRemoteError, peer, self, h.len, h.tag, UINT64_MAX);
  return st.withPeer(peer);
}

Status tcpConnectionError(int self, int peer, const char* call, int err) {
  // EOF and resets mean the process on the other end is gone; anything else is the network.
  if (err == 0 || err == ECONNRESET || err == EPIPE || err == ENOTCONN)
    return Status(Code::kPeerClosed,
                  fmt::format("rank {} closed the connection (process exited or was killed)", peer))
        .withLayer(Layer::kApplication)
        .withPeer(peer)
        .withNative(call, err);
  return core::errnoStatus(call, err, Layer::kHostNetwork, peer)
      .prepend(fmt::format("tcp connection from rank {} to rank {}", self, peer));
}

Status tcpDesync(int peer, int stream, const TcpFrameHeader& h) {
  return Status(Code::kInternal,
                fmt::format("tcp stream {} from rank {} lost its framing (frame kind {:#x}, tag "
                            "{:#x}, {} B): a bug in ccscope or a corrupted connection",
                            stream, peer, static_cast<uint32_t>(h.kind), h.tag, h.len))
      .withLayer(Layer::kLibrary)
      .withPeer(peer);
}

}  // namespace ccscope::transports
