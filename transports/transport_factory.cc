#include <fmt/format.h>

#include <array>

#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/transport.h"

namespace ccscope::transports {

namespace {

struct TransportEntry {
  const char* name;
  std::unique_ptr<Transport> (*make)(const TransportOptions&);
};

// Every transport compiled in: a new one adds its line here (docs/architecture.md, "Adding a
// transport").
constexpr std::array kTransports{
    TransportEntry{"shm", makeShmTransport},
    TransportEntry{"tcp", makeTcpTransport},
};

}  // namespace

core::Result<std::unique_ptr<Transport>> makeTransport(const std::string& name,
                                                       const TransportOptions& opts) {
  for (const TransportEntry& t : kTransports)
    if (name == t.name) return t.make(opts);
  return core::Status(core::Code::kInvalidArgument,
                      fmt::format("unknown transport '{}' (built in: {})", name, transportNames()));
}

bool isTransport(const std::string& name) {
  for (const TransportEntry& t : kTransports)
    if (name == t.name) return true;
  return false;
}

std::string transportNames() {
  std::string out;
  for (const TransportEntry& t : kTransports)
    out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out;
}

}  // namespace ccscope::transports
