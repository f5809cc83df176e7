#include "launch/wire.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace ccscope::launch {

using core::Code;
using core::Layer;
using core::Status;

static Status waitFd(int fd, short events, core::Deadline deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, deadline.remainingMsClamped(1 << 30));
    if (rc > 0) return Status::ok();
    if (rc == 0) return Status(Code::kDeadlineExceeded, "rendezvous store did not answer in time");
    if (errno != EINTR) return core::errnoStatus("poll", errno, Layer::kBootstrap);
  }
}

Status sendFrame(int fd, const std::string& frame, core::Deadline deadline) {
  size_t off = 0;
  while (off < frame.size()) {
    ssize_t n = ::send(fd, frame.data() + off, frame.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      CCSCOPE_RETURN_IF_ERROR(waitFd(fd, POLLOUT, deadline));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return core::errnoStatus("send", errno, Layer::kBootstrap);
  }
  return Status::ok();
}

static Status recvAll(int fd, char* buf, size_t len, core::Deadline deadline) {
  size_t off = 0;
  while (off < len) {
    ssize_t n = ::recv(fd, buf + off, len - off, MSG_DONTWAIT);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n == 0)
      return Status(Code::kPeerClosed, "rendezvous connection closed").withLayer(Layer::kBootstrap);
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      CCSCOPE_RETURN_IF_ERROR(waitFd(fd, POLLIN, deadline));
      continue;
    }
    if (errno == EINTR) continue;
    return core::errnoStatus("recv", errno, Layer::kBootstrap);
  }
  return Status::ok();
}

core::Result<Frame> recvFrame(int fd, core::Deadline deadline) {
  FrameHeader h;
  CCSCOPE_RETURN_IF_ERROR(recvAll(fd, reinterpret_cast<char*>(&h), sizeof h, deadline));
  if (h.magic != kStoreMagic || h.version != kStoreVersion || h.length > kMaxFrame)
    return Status(Code::kRemoteError,
                  fmt::format("not a ccscope rendezvous peer (magic {:#x}, version {})", h.magic,
                              h.version))
        .withLayer(Layer::kBootstrap);
  Frame f{static_cast<MsgType>(h.type), std::string(h.length, '\0')};
  CCSCOPE_RETURN_IF_ERROR(recvAll(fd, f.payload.data(), h.length, deadline));
  return f;
}

}  // namespace ccscope::launch
