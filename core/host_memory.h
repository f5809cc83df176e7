// Host memory for message buffers: page-aligned, pre-touched, and on transparent huge pages
// where asked for and the kernel grants them.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace ccscope::core {

// kHuge asks the kernel for 2 MiB transparent huge pages (madvise) on buffers of 2 MiB and
// more; kBase leaves the kernel's default, which is 4 KiB pages unless THP is set to "always".
// Large copies over 4 KiB pages spend much of their time on page-table walks and TLB misses
// (and CMA pins every page): on the development VM both ours and Open MPI's shared-memory
// collectives move about twice the bytes per second at 4-64 MiB on huge pages.
enum class HostPages { kHuge, kBase };
const char* hostPagesName(HostPages p);  // "huge", "base"

class HostBuffer {
 public:
  static constexpr size_t kHugePageBytes = 2u << 20;

  HostBuffer() = default;
  // Aborts with a message if the memory cannot be had (as new does): buffers are sized by the
  // user's -e before any rank starts to measure.
  explicit HostBuffer(size_t bytes, HostPages pages = HostPages::kBase);
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

// "" when every buffer asked for huge pages got them, else one line saying how much did and
// what the kernel's THP setting is (for the table, next to the figures it explains).
std::string hugePageShortfall(std::initializer_list<const HostBuffer*> buffers, HostPages asked);

}  // namespace ccscope::core
