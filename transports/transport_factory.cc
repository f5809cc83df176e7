#include <fmt/format.h>

#include <array>

#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/transport.h"
#ifdef CCSCOPE_HAVE_CUDA_IPC
#include "transports/cuda_ipc/cuda_ipc_transport.h"
#endif
#ifdef CCSCOPE_HAVE_NCCL_TRANSPORT
#include "transports/nccl/nccl_transport.h"
#endif
#ifdef CCSCOPE_HAVE_UCX_TRANSPORT
#include "transports/ucx/ucx_transport.h"
#endif
#ifdef CCSCOPE_HAVE_VERBS_TRANSPORT
#include "transports/verbs/verbs_transport.h"
#endif

namespace ccscope::transports {

namespace {

struct TransportEntry {
  const char* name;
  std::unique_ptr<Transport> (*make)(const TransportOptions&);
  bool built;  // compiled in; else make returns null
};

// Every transport ccscope knows, and whether this build compiled it in: a new one adds its line
// here (docs/architecture.md, "Adding a transport"). Not compiled in: its stub returns null and
// makeTransport says so (exit 5).
#ifdef CCSCOPE_HAVE_CUDA_IPC
constexpr bool kCudaIpcBuilt = true;
#else
constexpr bool kCudaIpcBuilt = false;
std::unique_ptr<Transport> makeCudaIpcTransport(const TransportOptions& /*opts*/) {
  return nullptr;
}
#endif
#ifdef CCSCOPE_HAVE_NCCL_TRANSPORT
constexpr bool kNcclBuilt = true;
#else
constexpr bool kNcclBuilt = false;
std::unique_ptr<Transport> makeNcclTransport(const TransportOptions& /*opts*/) { return nullptr; }
#endif
#ifdef CCSCOPE_HAVE_UCX_TRANSPORT
constexpr bool kUcxBuilt = true;
#else
constexpr bool kUcxBuilt = false;
std::unique_ptr<Transport> makeUcxTransport(const TransportOptions& /*opts*/) { return nullptr; }
#endif
#ifdef CCSCOPE_HAVE_VERBS_TRANSPORT
constexpr bool kVerbsBuilt = true;
#else
constexpr bool kVerbsBuilt = false;
std::unique_ptr<Transport> makeVerbsTransport(const TransportOptions& /*opts*/) { return nullptr; }
#endif

constexpr std::array kTransports{
    TransportEntry{"shm", makeShmTransport, true},
    TransportEntry{"tcp", makeTcpTransport, true},
    TransportEntry{"cuda-ipc", makeCudaIpcTransport, kCudaIpcBuilt},
    TransportEntry{"nccl", makeNcclTransport, kNcclBuilt},
    TransportEntry{"ucx", makeUcxTransport, kUcxBuilt},
    TransportEntry{"verbs", makeVerbsTransport, kVerbsBuilt},
};

}  // namespace

core::Result<std::unique_ptr<Transport>> makeTransport(const std::string& name,
                                                       const TransportOptions& opts) {
  for (const TransportEntry& t : kTransports) {
    if (name != t.name) continue;
    if (std::unique_ptr<Transport> made = t.make(opts)) return made;
    const bool gpu = name == "cuda-ipc";
    return core::Status(core::Code::kUnavailable,
                        fmt::format("{} is not compiled in ({} not found at build time)", name,
                                    gpu              ? "nvcc"
                                    : name == "nccl" ? "nvcc, or nccl.h and libnccl"
                                    : name == "ucx"  ? "libucx-dev"
                                                     : "libibverbs-dev"))
        .withLayer(gpu               ? core::Layer::kGpu
                   : name == "verbs" ? core::Layer::kRdma
                                     : core::Layer::kLibrary);
  }
  return core::Status(core::Code::kInvalidArgument,
                      fmt::format("unknown transport '{}' (known: {})", name, transportNames()));
}

core::Status transportUsable(const std::string& name) {
#ifdef CCSCOPE_HAVE_VERBS_TRANSPORT
  if (name == "verbs") return verbsUsable();
#endif
#ifdef CCSCOPE_HAVE_NCCL_TRANSPORT
  if (name == "nccl") return ncclUsable();
#endif
  if (!isTransport(name) || name == "shm" || name == "tcp") return core::Status::ok();
  // Not compiled in: the factory's own error says what was missing.
  auto t = makeTransport(name, TransportOptions{});
  return t ? core::Status::ok() : t.takeStatus();
}

bool isTransport(const std::string& name) {
  for (const TransportEntry& t : kTransports)
    if (name == t.name) return true;
  return false;
}

bool movesDeviceMemoryOnly(const std::string& name) { return name == "cuda-ipc" || name == "nccl"; }

std::string transportNames(bool built_only) {
  std::string out;
  for (const TransportEntry& t : kTransports)
    if (t.built || !built_only) out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out;
}

}  // namespace ccscope::transports
