// Small socket helpers shared by the rendezvous store, its clients and the TCP transport.
#pragma once

#include <string>

#include "core/deadline.h"
#include "core/status.h"

namespace ccscope::launch {

// RAII file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    reset(o.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1);
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

struct HostPort {
  std::string host;
  int port = 0;
  std::string toString() const;
};
// "10.0.0.1:29500", "[::1]:29500", "node01:29500".
core::Result<HostPort> parseHostPort(const std::string& s);

// Listening TCP socket on host:port (port 0 = ephemeral). EADDRINUSE becomes a clear error.
core::Result<Fd> listenTcp(const std::string& host, int port, int backlog = 512);
int boundPort(int fd);
std::string localAddressOf(int fd);  // getsockname() as text
// The address this host would send from toward host:port (empty when unknown); sends nothing
// and looks up no name: host must be a numeric address.
std::string sourceAddressToward(const std::string& host, int port);
std::string peerAddressOf(int fd);  // getpeername() as text
// Whether a host answers TCP at all: a connection accepted or refused (RST) means reachable;
// silence until the deadline means the path is down or filtered.
bool tcpReachable(const std::string& host, int port, core::Deadline deadline);
// Connects with retries on ECONNREFUSED until the deadline (the listener may not exist yet).
core::Result<Fd> connectTcp(const HostPort& hp, core::Deadline deadline, bool retry_refused);
core::Status setNonBlocking(int fd);
void setNoDelay(int fd);
// Address of a named interface (IPv4), or an error naming the interfaces that do exist.
core::Result<std::string> interfaceAddress(const std::string& ifname);

}  // namespace ccscope::launch
