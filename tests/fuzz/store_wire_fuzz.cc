// libFuzzer target for the rendezvous store's wire protocol as its server reads it: a real
// StoreServer on loopback gets, per input, one connection carrying frames cut from the input
// (type and payload from the fuzzer; magic and version right, so that the handlers are
// reached, and a correct hello first when the first byte is odd), or, when the first byte's
// second bit is set, the raw bytes themselves. Replies are read for a few milliseconds; the
// server must not crash, and must still accept the next connection and report its ranks' health.
// Built and run by scripts/fuzz-analyze.sh.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "launch/store_server.h"
#include "launch/wire.h"

namespace {

using namespace ccscope::launch;
constexpr char kToken[] = "fuzz-token";

StoreServer& server() {
  static std::unique_ptr<StoreServer> s = [] {
    auto r = StoreServer::start("127.0.0.1", 0, kToken, 4);
    if (!r.isOk()) __builtin_trap();
    return std::move(*r);
  }();
  return *s;
}

int connectTo(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) __builtin_trap();
  return fd;
}

std::string hello() {
  Writer w(MsgType::kHello);
  w.str(kToken).u32(0).u32(4).u32(static_cast<uint32_t>(getpid())).str("fuzzhost").u32(0);
  w.str("hostkey").str("127.0.0.1");
  return w.frame();
}

// Frames cut from the input: [type byte][length byte][payload of that length]...
std::string framesFrom(std::string_view in) {
  std::string out;
  while (in.size() >= 2) {
    const auto type = static_cast<MsgType>(static_cast<uint8_t>(in[0]) % 14);
    const size_t n = std::min<size_t>(static_cast<uint8_t>(in[1]), in.size() - 2);
    Writer w(type);
    std::string frame = w.frame();
    frame.append(in.substr(2, n));
    const auto len = static_cast<uint32_t>(n);
    std::memcpy(frame.data() + offsetof(FrameHeader, length), &len, sizeof len);
    out += frame;
    in.remove_prefix(2 + n);
  }
  return out;
}

void drain(int fd) {
  char buf[4096];
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 2) > 0 && read(fd, buf, sizeof buf) > 0) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  StoreServer& s = server();
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string bytes = (data[0] & 2) ? std::string(rest) : framesFrom(rest);
  if (data[0] & 1) bytes = hello() + bytes;
  const int fd = connectTo(s.port());
  (void)!write(fd, bytes.data(), bytes.size());
  drain(fd);
  close(fd);
  (void)s.health();
  return 0;
}
