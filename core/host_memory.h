// Host memory for message buffers: page-aligned, pre-touched, and on transparent huge pages
// where asked for and the kernel grants them.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>

#include "core/status.h"

namespace ccscope::core {

// kHuge asks the kernel for 2 MiB transparent huge pages (madvise) on buffers of 2 MiB and
// more; kBase leaves the kernel's default, which is 4 KiB pages unless THP is set to "always".
// Large copies over 4 KiB pages spend much of their time on page-table walks and TLB misses
// (and CMA pins every page), so shared-memory collectives, ours and Open MPI's, move more bytes
// per second at 1-64 MiB on huge pages (docs/performance.md, "Huge pages").
enum class HostPages { kHuge, kBase };
const char* hostPagesName(HostPages p);  // "huge", "base"

class HostBuffer {
 public:
  static constexpr size_t kHugePageBytes = 2u << 20;

  HostBuffer() = default;
  // For internal buffers of a fixed, small size: aborts with a message if the memory cannot be
  // had (as new does).
  explicit HostBuffer(size_t bytes, HostPages pages = HostPages::kBase);
  // For buffers sized by the user (-e): a failed mapping is an error status (kSystem, ENOMEM).
  static Result<HostBuffer> allocate(size_t bytes, HostPages pages);
  HostBuffer(HostBuffer&& o) noexcept { swap(o); }
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer();

  char* data() const { return p_; }
  size_t size() const { return n_; }
  // Bytes of this buffer the kernel has backed with huge pages now (from /proc/self/smaps; 0
  // where that cannot be read).
  size_t hugeBytes() const;

 private:
  void place(bool huge);  // aligns p_ in the mapping, asks for huge pages, faults pages in
  void swap(HostBuffer& o) {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(map_, o.map_);
    std::swap(map_len_, o.map_len_);
  }
  char* p_ = nullptr;
  size_t n_ = 0;
  void* map_ = nullptr;  // the mapping, which may start below p_ (huge-page alignment)
  size_t map_len_ = 0;
};

// The sum of one /proc/self/smaps field (e.g. "Rss", "AnonHugePages") over the mappings that
// overlap [p, p + n), in bytes; 0 where smaps cannot be read.
size_t smapsBytes(const void* p, size_t n, const std::string& field);

// Fails (kInvalidArgument, a configuration error) when `ranks_here` ranks allocating
// `per_rank` bytes each would not fit in the memory the kernel says is available
// (MemAvailable): faulting the buffers in would otherwise wake the OOM killer mid-run.
// `what` says where the bytes come from, for the message. Passes where /proc/meminfo cannot
// be read.
Status checkAvailableMemory(size_t per_rank, int ranks_here, const std::string& what);

// "" when every buffer asked for huge pages got them, else one line saying how much did and
// what the kernel's THP setting is (for the table, next to the figures it explains).
std::string hugePageShortfall(std::initializer_list<const HostBuffer*> buffers, HostPages asked);

}  // namespace ccscope::core
