#include <fmt/format.h>

#include <array>

#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/transport.h"
#ifdef CCSCOPE_HAVE_CUDA_IPC
#include "transports/cuda_ipc/cuda_ipc_transport.h"
#endif

namespace ccscope::transports {

namespace {

struct TransportEntry {
  const char* name;
  std::unique_ptr<Transport> (*make)(const TransportOptions&);
};

// Every transport compiled in: a new one adds its line here (docs/architecture.md, "Adding a
// transport").
#ifndef CCSCOPE_HAVE_CUDA_IPC
std::unique_ptr<Transport> makeCudaIpcTransport(const TransportOptions& /*opts*/) {
  return nullptr;  // not compiled in: makeTransport says so
}
#endif

constexpr std::array kTransports{
    TransportEntry{"shm", makeShmTransport},
    TransportEntry{"tcp", makeTcpTransport},
    TransportEntry{"cuda-ipc", makeCudaIpcTransport},
};

}  // namespace

core::Result<std::unique_ptr<Transport>> makeTransport(const std::string& name,
                                                       const TransportOptions& opts) {
  for (const TransportEntry& t : kTransports) {
    if (name != t.name) continue;
    if (std::unique_ptr<Transport> made = t.make(opts)) return made;
    return core::Status(core::Code::kUnavailable,
                        fmt::format("{} is not compiled in (no nvcc at build time)", name))
        .withLayer(core::Layer::kGpu);
  }
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
