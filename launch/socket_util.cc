#include "launch/socket_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace ccscope::launch {

using core::Code;
using core::Layer;
using core::Status;

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string HostPort::toString() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                             : fmt::format("{}:{}", host, port);
}

core::Result<HostPort> parseHostPort(const std::string& s) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon + 1 >= s.size())
    return Status(Code::kInvalidArgument, fmt::format("'{}' is not host:port", s));
  HostPort hp;
  hp.host = s.substr(0, colon);
  if (hp.host.size() >= 2 && hp.host.front() == '[')
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  try {
    size_t used = 0;
    hp.port = std::stoi(s.substr(colon + 1), &used);
    if (used != s.size() - colon - 1 || hp.port < 0 || hp.port > 65535) throw std::out_of_range("");
  } catch (...) {
    return Status(Code::kInvalidArgument, fmt::format("bad port in '{}'", s));
  }
  return hp;
}

static core::Result<addrinfo*> resolve(const std::string& host, int port, bool passive,
                                       bool numeric_only = false) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = (passive ? AI_PASSIVE : 0) | (numeric_only ? AI_NUMERICHOST : 0);
  addrinfo* res = nullptr;
  std::string port_s = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port_s.c_str(), &hints, &res);
  if (rc != 0)
    return Status(Code::kUnavailable,
                  fmt::format("cannot resolve '{}': {}", host, gai_strerror(rc)))
        .withLayer(Layer::kHostNetwork)
        .withNative("getaddrinfo", rc);
  return res;
}

core::Result<Fd> listenTcp(const std::string& host, int port, int backlog) {
  CCSCOPE_ASSIGN_OR_RETURN(addrinfo * res, resolve(host, port, true));
  Status last(Code::kUnavailable, "no address to bind");
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      last = core::errnoStatus("socket", errno, Layer::kHostNetwork);
      continue;
    }
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      int e = errno;
      last = core::errnoStatus("bind", e, Layer::kBootstrap);
      if (e == EADDRINUSE)
        last = Status(Code::kInvalidArgument,
                      fmt::format("port {} on {} is already in use: pick another port or stop "
                                  "the process holding it",
                                  port, host.empty() ? "*" : host))
                   .withLayer(Layer::kBootstrap)
                   .withNative("bind", e);
      continue;
    }
    if (::listen(fd.get(), backlog) != 0) {
      last = core::errnoStatus("listen", errno, Layer::kBootstrap);
      continue;
    }
    freeaddrinfo(res);
    return fd;
  }
  freeaddrinfo(res);
  return last;
}

int boundPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return -1;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

std::string localAddressOf(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  char buf[INET6_ADDRSTRLEN] = {0};
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  if (ss.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, buf, sizeof buf);
  else
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof buf);
  return buf;
}

std::string sourceAddressToward(const std::string& host, int port) {
  // No name lookup: callers run this before any deadline applies.
  auto res = resolve(host, port, false, /*numeric_only=*/true);
  if (!res) return "";
  std::string out;
  // A UDP connect sends nothing: it only asks the kernel which source address the route uses.
  Fd s(socket((*res)->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (s.valid() && connect(s.get(), (*res)->ai_addr, (*res)->ai_addrlen) == 0)
    out = localAddressOf(s.get());
  freeaddrinfo(*res);
  return out;
}

std::string peerAddressOf(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  char buf[INET6_ADDRSTRLEN] = {0};
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  if (ss.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, buf, sizeof buf);
  else
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof buf);
  return buf;
}

bool tcpReachable(const std::string& host, int port, core::Deadline deadline) {
  auto fd = connectTcp(HostPort{host, port}, deadline, /*retry_refused=*/false);
  if (fd) return true;
  long err = fd.status().nativeCode();
  return err == ECONNREFUSED || err == ECONNRESET;
}

static Status connectOnce(const addrinfo* ai, core::Deadline deadline, Fd* out) {
  Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return core::errnoStatus("socket", errno, Layer::kHostNetwork);
  if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return core::errnoStatus("connect", errno, Layer::kHostNetwork);
    pollfd p{fd.get(), POLLOUT, 0};
    int rc = ::poll(&p, 1, deadline.remainingMsClamped(1 << 30));
    if (rc == 0)
      return Status(Code::kDeadlineExceeded, "connect timed out").withLayer(Layer::kHostNetwork);
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return core::errnoStatus("connect", err, Layer::kHostNetwork);
  }
  *out = std::move(fd);
  return Status::ok();
}

core::Result<Fd> connectTcp(const HostPort& hp, core::Deadline deadline, bool retry_refused) {
  CCSCOPE_ASSIGN_OR_RETURN(addrinfo * res, resolve(hp.host, hp.port, false));
  Status last;
  int delay_ms = 5;
  while (true) {
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
      Fd fd;
      last = connectOnce(ai, deadline, &fd);
      if (last.isOk()) {
        freeaddrinfo(res);
        setNoDelay(fd.get());
        return fd;
      }
    }
    bool retriable = last.nativeCode() == ECONNREFUSED || last.nativeCode() == ECONNRESET;
    if (!retry_refused || !retriable || deadline.expired()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    delay_ms = std::min(delay_ms * 2, 200);
  }
  freeaddrinfo(res);
  return last.prepend(fmt::format("connecting to {}", hp.toString()));
}

Status setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
    return core::errnoStatus("fcntl(O_NONBLOCK)", errno);
  return Status::ok();
}

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

core::Result<std::string> interfaceAddress(const std::string& ifname) {
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return core::errnoStatus("getifaddrs", errno, Layer::kHostNetwork);
  std::string found, names;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    if (ifname == i->ifa_name && found.empty()) found = buf;
    if (names.find(i->ifa_name) == std::string::npos)
      names += std::string(names.empty() ? "" : ", ") + i->ifa_name;
  }
  freeifaddrs(ifs);
  if (found.empty())
    return Status(Code::kInvalidArgument,
                  fmt::format("network interface '{}' does not exist or has no IPv4 address "
                              "(interfaces here: {})",
                              ifname, names))
        .withLayer(Layer::kHostNetwork);
  return found;
}

}  // namespace ccscope::launch
