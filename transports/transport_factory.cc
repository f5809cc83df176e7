#include <fmt/format.h>

#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/transport.h"

namespace ccscope::transports {

core::Result<std::unique_ptr<Transport>> makeTransport(const std::string& name,
                                                       const TransportOptions& opts) {
  if (name == "shm") return makeShmTransport(opts);
  if (name == "tcp") return makeTcpTransport(opts);
  return core::Status(core::Code::kInvalidArgument,
                      fmt::format("unknown transport '{}' (built in: {})", name, transportNames()));
}

std::string transportNames() { return "shm, tcp"; }

}  // namespace ccscope::transports
