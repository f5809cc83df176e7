#include "core/host_memory.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/check.h"
#include "core/units.h"

namespace ccscope::core {

const char* hostPagesName(HostPages p) { return p == HostPages::kHuge ? "huge" : "base"; }

HostBuffer::HostBuffer(size_t bytes, HostPages pages) {
  auto b = allocate(bytes, pages);
  CCSCOPE_CHECK(b.isOk(), b.status().toString());
  swap(*b);
}

Result<HostBuffer> HostBuffer::allocate(size_t bytes, HostPages pages) {
  HostBuffer b;
  if (bytes == 0) return b;
  const bool huge = pages == HostPages::kHuge && bytes >= kHugePageBytes;
  // A huge page needs a 2 MiB-aligned start: map one huge page more and start at the boundary.
  const size_t len = huge ? bytes + kHugePageBytes : bytes;
  void* map = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED)
    return errnoStatus("mmap", errno)
        .prepend(fmt::format("cannot allocate {} of host memory", formatBytes(bytes)));
  b.map_ = map;
  b.map_len_ = len;
  b.n_ = bytes;
  b.place(huge);
  return b;
}

void HostBuffer::place(bool huge) {
  p_ = static_cast<char*>(map_);
  if (huge) {
    const auto at = reinterpret_cast<uintptr_t>(map_);
    p_ += (kHugePageBytes - at % kHugePageBytes) % kHugePageBytes;  // up to the next huge page
    // Refused where THP is "never" or the kernel lacks it: the buffer stays on base pages and
    // hugePageShortfall() says so.
    (void)madvise(p_, n_, MADV_HUGEPAGE);
  }
  std::memset(p_, 0, n_);  // fault every page in now, not inside the timed loop
}

HostBuffer::~HostBuffer() {
  if (map_) munmap(map_, map_len_);
}

size_t HostBuffer::hugeBytes() const { return p_ ? smapsBytes(p_, n_, "AnonHugePages") : 0; }

size_t smapsBytes(const void* p, size_t n, const std::string& field) {
  std::ifstream smaps("/proc/self/smaps");
  const auto lo = reinterpret_cast<uintptr_t>(p), hi = lo + n;
  const std::string key = field + ":";
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
    if (!inside || line.compare(0, key.size(), key) != 0) continue;
    size_t kb = 0;
    if (std::sscanf(line.c_str() + key.size(), " %zu kB", &kb) == 1) total_kb += kb;
  }
  return total_kb * 1024;
}

Status checkAvailableMemory(size_t per_rank, int ranks_here, const std::string& what) {
  std::ifstream meminfo("/proc/meminfo");
  size_t available_kb = 0;
  for (std::string line; std::getline(meminfo, line);)
    if (std::sscanf(line.c_str(), "MemAvailable: %zu kB", &available_kb) == 1) break;
  const int ranks = std::max(ranks_here, 1);
  const double want = static_cast<double>(per_rank) * ranks, have = available_kb * 1024.0;
  if (available_kb == 0 || want <= have) return Status::ok();
  constexpr double kGiB = 1 << 30;
  return Status(
      Code::kInvalidArgument,
      fmt::format("{} need {:.1f} GiB per rank, {:.1f} GiB for the {} rank{} on this "
                  "host, and {:.1f} GiB is available (MemAvailable): lower -e or run "
                  "fewer ranks per host",
                  what, per_rank / kGiB, want / kGiB, ranks, ranks == 1 ? "" : "s", have / kGiB));
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
  return fmt::format(
      "host buffers: huge pages asked for, {} of {} MiB received "
      "(/sys/kernel/mm/transparent_hugepage/enabled: {}); large-message figures are on base pages",
      got >> 20, want >> 20, setting.empty() ? "unreadable" : setting);
}

}  // namespace ccscope::core
