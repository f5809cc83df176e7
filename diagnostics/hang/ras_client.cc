#include "diagnostics/hang/ras_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "diagnostics/analyze/ras_report.h"

namespace ccscope::diagnostics {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxReportBytes = 64u << 20;

class Conn {
 public:
  Conn(const RasQuery& q, Clock::time_point deadline) : q_(q), deadline_(deadline) {}
  ~Conn() {
    if (fd_ >= 0) ::close(fd_);
  }
  std::string where() const { return fmt::format("{}:{}", q_.host, q_.port); }

  int msLeft() const {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    return static_cast<int>(std::max<long>(0, left.count()));
  }

  core::Status connect() {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(q_.port);
    if (int rc = getaddrinfo(q_.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
      return core::Status(core::Code::kInvalidArgument,
                          fmt::format("RAS address {}: {}", where(), gai_strerror(rc)));
    }
    core::Status last(core::Code::kUnavailable, "no address");
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      fd_ = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd_ < 0) continue;
      int rc = ::connect(fd_, a->ai_addr, a->ai_addrlen);
      if (rc != 0 && errno == EINPROGRESS) {
        pollfd p{fd_, POLLOUT, 0};
        rc = ::poll(&p, 1, msLeft());
        if (rc == 0) {
          last = core::Status(core::Code::kDeadlineExceeded,
                              fmt::format("RAS at {}: connection not established within the "
                                          "timeout (a firewall, or a host that does not answer)",
                                          where()));
        } else {
          int err = 0;
          socklen_t len = sizeof err;
          ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
          errno = err;
          rc = err == 0 ? 0 : -1;
        }
      }
      if (rc == 0) break;
      if (errno == ECONNREFUSED) {
        last = core::Status(core::Code::kUnavailable,
                            fmt::format("no RAS listener at {}: no NCCL process of a job runs "
                                        "there, its NCCL is older than 2.24, or the job set "
                                        "NCCL_RAS_ENABLE=0 (another port: NCCL_RAS_ADDR)",
                                        where()));
      } else if (errno != 0) {
        last = core::Status(core::Code::kUnavailable,
                            fmt::format("RAS at {}: connect: {}", where(), std::strerror(errno)));
      }
      ::close(fd_);
      fd_ = -1;
    }
    freeaddrinfo(res);
    return fd_ >= 0 ? core::Status::ok() : last;
  }

  core::Status send(const std::string& line, std::vector<std::string>& transcript) {
    transcript.push_back("> " + line);
    const std::string data = line + "\n";
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n > 0) {
        off += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        pollfd p{fd_, POLLOUT, 0};
        if (::poll(&p, 1, msLeft()) > 0) continue;
        return core::Status(core::Code::kDeadlineExceeded,
                            fmt::format("RAS at {}: could not send \"{}\" in time", where(), line));
      }
      return core::Status(
          core::Code::kPeerClosed,
          fmt::format("RAS at {} closed the connection before \"{}\" was sent", where(), line));
    }
    return core::Status::ok();
  }

  // Reads into buf_ until it holds a line (or EOF, or the deadline). closed_ at EOF.
  core::Status readLine(std::string& line, const std::string& waiting_for) {
    while (true) {
      const size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        line = buf_.substr(0, nl);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        buf_.erase(0, nl + 1);
        return core::Status::ok();
      }
      if (closed_) {
        return core::Status(core::Code::kPeerClosed,
                            fmt::format("RAS at {} closed the connection while {} was awaited",
                                        where(), waiting_for));
      }
      CCSCOPE_RETURN_IF_ERROR(fill(waiting_for));
    }
  }

  // Everything until the server closes the connection.
  core::Status readAll(std::string& out, const std::string& waiting_for) {
    while (!closed_) {
      auto st = fill(waiting_for);
      if (!st.isOk()) {
        out = std::move(buf_);
        return st;
      }
      if (buf_.size() > kMaxReportBytes) {
        return core::Status(
            core::Code::kInvalidArgument,
            fmt::format("RAS at {}: report larger than {} MiB", where(), kMaxReportBytes >> 20));
      }
    }
    out = std::move(buf_);
    return core::Status::ok();
  }

 private:
  core::Status fill(const std::string& waiting_for) {
    pollfd p{fd_, POLLIN, 0};
    const int rc = ::poll(&p, 1, msLeft());
    if (rc == 0) {
      return core::Status(
          core::Code::kDeadlineExceeded,
          fmt::format("RAS at {} did not send {} within the timeout", where(), waiting_for));
    }
    char chunk[65536];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n > 0) {
      buf_.append(chunk, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      closed_ = true;
    }
    return core::Status::ok();
  }

  const RasQuery& q_;
  Clock::time_point deadline_;
  int fd_ = -1;
  std::string buf_;
  bool closed_ = false;
};

// Connects and completes the protocol handshake.
core::Status handshake(Conn& c, RasAnswer& a) {
  CCSCOPE_RETURN_IF_ERROR(c.connect());
  CCSCOPE_RETURN_IF_ERROR(
      c.send(fmt::format("CLIENT PROTOCOL {}", kRasClientProtocol), a.transcript));
  std::string line;
  CCSCOPE_RETURN_IF_ERROR(c.readLine(line, "the server's protocol line"));
  a.transcript.push_back("< " + line);
  int version = -1;
  if (std::sscanf(line.c_str(), "SERVER PROTOCOL %d", &version) != 1) {
    return core::Status(core::Code::kUnsupported,
                        fmt::format("{} is not an NCCL RAS server: it answered \"{}\" to the "
                                    "protocol handshake",
                                    c.where(), line.substr(0, 120)));
  }
  a.server_protocol = version;
  // Protocol 1 servers predate the commands used here; newer ones still answer protocol 2.
  if (version < kRasClientProtocol) {
    return core::Status(core::Code::kUnsupported,
                        fmt::format("RAS at {} speaks protocol {}; this client needs {} (NCCL "
                                    "2.24 or newer)",
                                    c.where(), version, kRasClientProtocol));
  }
  return core::Status::ok();
}

}  // namespace

core::Result<RasQuery> parseRasAddress(const std::string& s) {
  RasQuery q;
  std::string host = s, port;
  if (!s.empty() && s.front() == '[') {
    const size_t close = s.find(']');
    if (close == std::string::npos)
      return core::Status(core::Code::kInvalidArgument, "RAS address " + s + ": no closing ]");
    host = s.substr(1, close - 1);
    if (close + 1 < s.size() && s[close + 1] == ':') port = s.substr(close + 2);
  } else if (const size_t colon = s.rfind(':');
             colon != std::string::npos && s.find(':') == colon) {
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
  }
  if (!host.empty()) q.host = host;
  if (!port.empty()) {
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || p <= 0 || p > 65535)
      return core::Status(core::Code::kInvalidArgument, "RAS address " + s + ": bad port");
    q.port = static_cast<int>(p);
  }
  return q;
}

core::Result<RasAnswer> queryRas(const RasQuery& q) {
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<long>(q.timeout_s * 1000));
  RasAnswer a;
  std::string line;
  const std::string command = q.verbose ? "VERBOSE STATUS" : "STATUS";
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool want_json = q.json && attempt == 0;
    Conn c(q, deadline);
    a.transcript.clear();
    CCSCOPE_RETURN_IF_ERROR(handshake(c, a));
    if (want_json) {
      CCSCOPE_RETURN_IF_ERROR(c.send("SET FORMAT json", a.transcript));
      auto st = c.readLine(line, "the answer to SET FORMAT json");
      if (st.isOk()) a.transcript.push_back("< " + line);
      if (!st.isOk() || line != "OK") {
        // An older server: it refused the command or dropped the connection; ask again in text.
        if (st.code() == core::Code::kDeadlineExceeded) return st;
        a.note = st.isOk()
                     ? fmt::format("JSON refused (\"{}\"): text report read", line.substr(0, 80))
                     : "JSON refused (connection closed): text report read";
        continue;
      }
    }
    CCSCOPE_RETURN_IF_ERROR(c.send(command, a.transcript));
    std::string body;
    auto st = c.readAll(body, "its report");
    if (!st.isOk()) {
      if (st.code() == core::Code::kDeadlineExceeded && !body.empty()) {
        return core::Status(core::Code::kDeadlineExceeded,
                            fmt::format("RAS at {} had sent {} bytes of its report when the "
                                        "timeout ran out (a job-wide report waits on every node)",
                                        c.where(), body.size()));
      }
      return st;
    }
    if (body.empty()) {
      return core::Status(
          core::Code::kPeerClosed,
          fmt::format("RAS at {} closed the connection without a report", c.where()));
    }
    a.text = std::move(body);
    a.format = "text";
    if (want_json) {
      if (nlohmann::json::accept(a.text)) {
        a.format = "json";
      } else if (std::string repaired = repairRasJson(a.text); nlohmann::json::accept(repaired)) {
        a.text = std::move(repaired);
        a.format = "json";
        a.note = "the JSON's missing commas (NCCL 2.28.7-2.28.9) repaired";
      } else {
        a.note = "the report asked for as JSON did not parse: kept as text";
      }
    }
    return a;
  }
  return core::Status(core::Code::kInternal, "RAS: no attempt left");
}

}  // namespace ccscope::diagnostics
