#include "core/host_memory.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/check.h"

namespace ccscope::core {

const char* hostPagesName(HostPages p) { return p == HostPages::kHuge ? "huge" : "base"; }

HostBuffer::HostBuffer(size_t bytes, HostPages pages) : n_(bytes) {
  if (bytes == 0) return;
  const bool huge = pages == HostPages::kHuge && bytes >= kHugePageBytes;
  // A huge page needs a 2 MiB-aligned start: map one huge page more and start at the boundary.
  map_len_ = huge ? bytes + kHugePageBytes : bytes;
  map_ = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CCSCOPE_CHECK(map_ != MAP_FAILED, fmt::format("cannot allocate {} B of host memory", bytes));
  auto at = reinterpret_cast<uintptr_t>(map_);
  if (huge) {
    at = (at + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
    // Refused where THP is "never" or the kernel lacks it: the buffer stays on base pages and
    // hugePageShortfall() says so.
    (void)madvise(reinterpret_cast<void*>(at), bytes, MADV_HUGEPAGE);
  }
  p_ = reinterpret_cast<char*>(at);
  std::memset(p_, 0, bytes);  // fault every page in now, not inside the timed loop
}

HostBuffer::~HostBuffer() {
  if (map_) munmap(map_, map_len_);
}

size_t HostBuffer::hugeBytes() const {
  if (!p_) return 0;
  std::ifstream smaps("/proc/self/smaps");
  const auto lo = reinterpret_cast<uintptr_t>(p_), hi = lo + n_;
  bool inside = false;
  size_t total_kb = 0;
  for (std::string line; std::getline(smaps, line);) {
    // A mapping's header: "start-end perms offset dev inode [path]", addresses in hex.
    uintptr_t start = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> start >> dash >> end && dash == '-') {
      inside = start < hi && end > lo;
      continue;
    }
    size_t kb = 0;
    if (inside && std::sscanf(line.c_str(), "AnonHugePages: %zu kB", &kb) == 1) total_kb += kb;
  }
  return total_kb * 1024;
}

std::string hugePageShortfall(std::initializer_list<const HostBuffer*> buffers, HostPages asked) {
  if (asked != HostPages::kHuge) return "";
  size_t want = 0, got = 0;
  for (const HostBuffer* b : buffers) {
    if (b->size() < HostBuffer::kHugePageBytes) continue;
    // Whole huge pages only: the tail below the last 2 MiB boundary stays on base pages.
    want += b->size() / HostBuffer::kHugePageBytes * HostBuffer::kHugePageBytes;
    got += b->hugeBytes();
  }
  if (got >= want) return "";
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string setting;
  std::getline(f, setting);
  return fmt::format("host buffers: huge pages asked for, {} of {} MiB received (transparent_hugepage "
                     "/enabled: {}); large-message figures are on base pages",
                     got >> 20, want >> 20, setting.empty() ? "unreadable" : setting);
}

}  // namespace ccscope::core
