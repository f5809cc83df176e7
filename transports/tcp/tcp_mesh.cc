#include "transports/tcp/tcp_mesh.h"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>

#include "transports/tcp/tcp_wire.h"

namespace ccscope::transports {

using core::Code;
using core::Deadline;
using core::Layer;
using core::Status;
using launch::Fd;

namespace {

// A stray connection that never says hello must not stall the accept loop for long.
constexpr int64_t kHelloTimeoutNs = 5'000'000'000;
constexpr int kListenBacklog = 1024;

// What one mesh build needs to know, passed around instead of six parameters.
struct MeshPlan {
  int rank = 0;
  int size = 1;
  int streams = 1;
  uint64_t token_hash = 0;
  std::string key_prefix;  // "tcp/addr/" for the first transport of a process, then "tcp/<n>/addr/"
  std::vector<std::string> addrs;  // peers' published "host:port"
};

Status waitFd(int fd, short events, Deadline deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, deadline.remainingMsClamped(1000));
    if (rc > 0) return Status::ok();
    if (rc < 0 && errno != EINTR) return core::errnoStatus("poll", errno, Layer::kHostNetwork);
    if (deadline.expired())
      return Status(Code::kDeadlineExceeded, "timed out").withLayer(Layer::kHostNetwork);
  }
}

Status sendAll(int fd, const void* buf, size_t len, Deadline deadline) {
  const char* p = static_cast<const char*>(buf);
  for (size_t off = 0; off < len;) {
    ssize_t n = ::send(fd, p + off, len - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
      return core::errnoStatus("send", errno, Layer::kHostNetwork);
    CCSCOPE_RETURN_IF_ERROR(waitFd(fd, POLLOUT, deadline));
  }
  return Status::ok();
}

Status recvAll(int fd, void* buf, size_t len, Deadline deadline) {
  char* p = static_cast<char*>(buf);
  for (size_t off = 0; off < len;) {
    ssize_t n = ::recv(fd, p + off, len - off, 0);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n == 0)
      return Status(Code::kPeerClosed,
                    "the connection was closed during the hello (the peer "
                    "exited, or refused it: wrong job token or world size?)")
          .withLayer(Layer::kHostNetwork);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return core::errnoStatus("recv", errno, Layer::kHostNetwork);
    CCSCOPE_RETURN_IF_ERROR(waitFd(fd, POLLIN, deadline));
  }
  return Status::ok();
}

TcpHello makeHello(const MeshPlan& plan, int stream) {
  TcpHello h;
  h.stream = static_cast<uint16_t>(stream);
  h.rank = plan.rank;
  h.size = plan.size;
  h.streams = plan.streams;
  h.token_hash = plan.token_hash;
  return h;
}

// Why a hello is refused, or "" when it is acceptable. `from` is the rank it must come from,
// or -1 for "any lower rank" (the acceptor's view).
std::string helloProblem(const TcpHello& h, const MeshPlan& plan, int from) {
  if (h.magic != kTcpMagic) return "not a ccscope tcp hello (wrong magic or byte order)";
  if (h.version != kTcpVersion)
    return fmt::format("protocol version {} (this rank speaks {})", h.version, kTcpVersion);
  if (h.token_hash != plan.token_hash) return "wrong job token (a process of another job?)";
  if (h.size != plan.size || h.streams != plan.streams)
    return fmt::format("world size {} with {} streams (this rank: {} with {})", h.size, h.streams,
                       plan.size, plan.streams);
  if (h.stream >= plan.streams) return fmt::format("stream index {} out of range", h.stream);
  bool rank_ok = from >= 0 ? h.rank == from : (h.rank >= 0 && h.rank < plan.rank);
  if (!rank_ok) return fmt::format("unexpected rank {}", h.rank);
  return "";
}

Deadline helloDeadline(Deadline deadline) {
  return Deadline::after(
      std::chrono::nanoseconds(std::min(deadline.remainingNs(), kHelloTimeoutNs)));
}

// Lower rank's side: connect every stream to each higher rank and say hello; acks come later,
// so no rank waits on another inside this loop (the kernel completes the handshakes).
Status connectToHigher(launch::Bootstrap& bs, MeshPlan& plan, Deadline deadline,
                       std::vector<Fd>& fds) {
  for (int q = plan.rank + 1; q < plan.size; ++q) {
    auto addr = bs.get(plan.key_prefix + std::to_string(q), deadline);
    if (!addr)
      return addr.takeStatus().withPeer(q).prepend(
          fmt::format("rank {} looking up the tcp address of rank {}", plan.rank, q));
    plan.addrs[q] = *addr;
    CCSCOPE_ASSIGN_OR_RETURN(launch::HostPort hp, launch::parseHostPort(*addr));
    for (int s = 0; s < plan.streams; ++s) {
      std::string where = fmt::format("rank {} connecting to rank {} at {} (stream {} of {})",
                                      plan.rank, q, *addr, s, plan.streams);
      auto fd = launch::connectTcp(hp, deadline, /*retry_refused=*/true);
      if (!fd) return fd.takeStatus().withPeer(q).prepend(where);
      TcpHello h = makeHello(plan, s);
      Status st = sendAll(fd->get(), &h, sizeof h, deadline);
      if (!st) return st.withPeer(q).prepend(where);
      fds[q * plan.streams + s] = std::move(*fd);
    }
  }
  return Status::ok();
}

// Reads and checks one hello on an accepted connection; on success stores the socket.
std::string admit(Fd fd, const MeshPlan& plan, Deadline deadline, std::vector<Fd>& fds) {
  TcpHello h;
  Deadline hd = helloDeadline(deadline);
  Status st = recvAll(fd.get(), &h, sizeof h, hd);
  if (!st) return "no hello: " + st.message();
  std::string why = helloProblem(h, plan, -1);
  if (why.empty() && fds[h.rank * plan.streams + h.stream].valid())
    why = fmt::format("duplicate stream {} from rank {}", h.stream, h.rank);
  if (!why.empty()) return fmt::format("connection claiming rank {}: {}", h.rank, why);
  TcpHello ack = makeHello(plan, h.stream);
  st = sendAll(fd.get(), &ack, sizeof ack, hd);
  if (!st)
    return fmt::format("rank {} stream {}: sending the ack: {}", h.rank, h.stream, st.message());
  launch::setNoDelay(fd.get());
  fds[h.rank * plan.streams + h.stream] = std::move(fd);
  return "";
}

Status acceptTimeout(const MeshPlan& plan, const std::vector<Fd>& fds, int rejected,
                     const std::string& last_reject) {
  std::string missing;
  for (int q = 0; q < plan.rank; ++q) {
    int have = 0;
    for (int s = 0; s < plan.streams; ++s) have += fds[q * plan.streams + s].valid();
    if (have < plan.streams)
      missing += fmt::format("{}rank {} ({} of {} streams)", missing.empty() ? "" : ", ", q, have,
                             plan.streams);
  }
  std::string msg =
      fmt::format("rank {} timed out waiting for tcp connections from {}", plan.rank, missing);
  if (rejected > 0)
    msg += fmt::format("; refused {} connection(s), last: {}", rejected, last_reject);
  return Status(Code::kDeadlineExceeded, msg).withLayer(Layer::kHostNetwork);
}

// Higher rank's side: accept rank * streams verified connections; strays are refused and logged.
Status acceptFromLower(int listen_fd, const MeshPlan& plan, Deadline deadline,
                       std::vector<Fd>& fds) {
  int missing = plan.rank * plan.streams, rejected = 0;
  std::string last_reject;
  while (missing > 0) {
    if (!waitFd(listen_fd, POLLIN, deadline))
      return acceptTimeout(plan, fds, rejected, last_reject);
    Fd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd.valid()) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      return core::errnoStatus("accept4", errno, Layer::kHostNetwork);
    }
    std::string why = admit(std::move(fd), plan, deadline, fds);
    if (why.empty()) {
      --missing;
      continue;
    }
    ++rejected;
    last_reject = why;
    spdlog::warn("tcp: rank {} refused {}", plan.rank, why);
  }
  return Status::ok();
}

Status readAcks(const MeshPlan& plan, Deadline deadline, const std::vector<Fd>& fds) {
  for (int q = plan.rank + 1; q < plan.size; ++q) {
    for (int s = 0; s < plan.streams; ++s) {
      std::string where = fmt::format("rank {} waiting for rank {} at {} to accept stream {}",
                                      plan.rank, q, plan.addrs[q], s);
      TcpHello h;
      Status st = recvAll(fds[q * plan.streams + s].get(), &h, sizeof h, deadline);
      if (!st) return st.withPeer(q).prepend(where);
      std::string why = helloProblem(h, plan, q);
      if (why.empty() && h.stream != s) why = fmt::format("ack for stream {}", h.stream);
      if (!why.empty())
        return Status(Code::kRemoteError, why)
            .withLayer(Layer::kHostNetwork)
            .withPeer(q)
            .prepend(where);
    }
  }
  return Status::ok();
}

}  // namespace

core::Result<TcpEndpoint> chooseTcpEndpoint(const TransportOptions& opts) {
  if (!opts.listen_host.empty()) return TcpEndpoint{opts.listen_host, opts.listen_host};
  if (!opts.ifname.empty()) {
    CCSCOPE_ASSIGN_OR_RETURN(std::string addr, launch::interfaceAddress(opts.ifname));
    return TcpEndpoint{addr, addr};
  }
  if (const char* adv = std::getenv("CCSCOPE_TCP_ADVERTISE"); adv && *adv)
    return TcpEndpoint{"0.0.0.0", adv};
  return TcpEndpoint{"127.0.0.1", "127.0.0.1"};
}

core::Result<std::vector<Fd>> buildTcpMesh(launch::Bootstrap& bs, const TransportOptions& opts,
                                           Deadline deadline) {
  if (opts.streams < 1 || opts.streams > kTcpMaxStreams)
    return Status(Code::kInvalidArgument,
                  fmt::format("tcp streams must be 1..{}, got {}", kTcpMaxStreams, opts.streams));
  // Every transport instance of a job gets fresh keys, so a second connect never reads the
  // addresses of a transport that is already closed (ranks create transports in the same order).
  static std::atomic<int> instances{0};
  int instance = instances.fetch_add(1);
  MeshPlan plan{bs.rank(),
                bs.size(),
                opts.streams,
                tcpTokenHash(bs.jobToken()),
                opts.scope + (instance == 0 ? "tcp/addr/" : fmt::format("tcp/{}/addr/", instance)),
                std::vector<std::string>(bs.size())};
  CCSCOPE_ASSIGN_OR_RETURN(TcpEndpoint ep, chooseTcpEndpoint(opts));
  auto listener = launch::listenTcp(ep.bind_host, 0, kListenBacklog);
  if (!listener)
    return listener.takeStatus()
        .withLayer(Layer::kHostNetwork)
        .prepend(fmt::format("rank {} listening for tcp peers on {}", plan.rank, ep.bind_host));
  launch::HostPort me{ep.advertise_host, launch::boundPort(listener->get())};
  CCSCOPE_RETURN_IF_ERROR(bs.put(plan.key_prefix + std::to_string(plan.rank), me.toString()));
  std::vector<Fd> fds(static_cast<size_t>(plan.size) * plan.streams);
  CCSCOPE_RETURN_IF_ERROR(connectToHigher(bs, plan, deadline, fds));
  CCSCOPE_RETURN_IF_ERROR(acceptFromLower(listener->get(), plan, deadline, fds));
  CCSCOPE_RETURN_IF_ERROR(readAcks(plan, deadline, fds));
  return fds;
}

}  // namespace ccscope::transports
