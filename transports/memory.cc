#include "transports/memory.h"

#include <fmt/format.h>

namespace ccscope::transports {

const char* memoryKindName(MemoryKind k) {
  switch (k) {
    case MemoryKind::kHost:
      return "host";
    case MemoryKind::kHostPinned:
      return "host-pinned";
    case MemoryKind::kCuda:
      return "cuda";
  }
  return "?";
}

std::string MemoryKinds::names() const {
  std::string out;
  for (MemoryKind k : {MemoryKind::kHost, MemoryKind::kHostPinned, MemoryKind::kCuda})
    if (has(k)) out += std::string(out.empty() ? "" : ", ") + memoryKindName(k);
  return out.empty() ? "nothing" : out;
}

core::Result<MemoryRegion> MemoryRegion::slice(size_t offset, size_t len) const {
  if (!contains(offset, len))
    return core::Status(
        core::Code::kInvalidArgument,
        fmt::format("{} B at offset {} overrun memory region {} of {} B", len, offset, id_, len_));
  return view(offset, len);
}

}  // namespace ccscope::transports
