#include "transports/shm/shm_address.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>

namespace ccscope::transports::shm {
namespace {

constexpr uint32_t kAddressVersion = 1;
struct Wire {
  uint32_t version;
  int32_t pid;
  uint64_t header;
  char name[64];
  char host[256];
};

}  // namespace

std::string encodeAddress(const ShmAddress& a) {
  Wire w{};
  w.version = kAddressVersion;
  w.pid = a.pid;
  w.header = a.header;
  std::snprintf(w.name, sizeof w.name, "%s", a.name.c_str());
  std::snprintf(w.host, sizeof w.host, "%s", a.host.c_str());
  return std::string(reinterpret_cast<const char*>(&w), sizeof w);
}

core::Result<ShmAddress> decodeAddress(std::string_view bytes, int from, int self,
                                       const std::string& self_host) {
  Wire w{};
  if (bytes.size() != sizeof w ||
      (std::memcpy(&w, bytes.data(), sizeof w), w.version != kAddressVersion))
    return core::Status(core::Code::kRemoteError,
                        fmt::format("bad shm address from rank {}", from));
  w.name[sizeof w.name - 1] = w.host[sizeof w.host - 1] = 0;
  ShmAddress a{w.pid, w.header, w.name, w.host};
  if (a.host != self_host)
    return core::Status(core::Code::kUnsupported,
                        fmt::format("the shm transport needs all ranks on one host, but rank {} "
                                    "runs on {} and rank {} on {}: use --transport tcp",
                                    from, a.host, self, self_host))
        .withLayer(core::Layer::kBootstrap);
  return a;
}

}  // namespace ccscope::transports::shm
