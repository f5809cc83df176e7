#include "transports/shm/shm_segment.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <new>

namespace ccscope::transports::shm {

using core::Code;
using core::Layer;
using core::Status;

size_t segmentBytes(int nranks) { return sizeof(SegmentHeader) + sizeof(Ring) * nranks; }

Segment& Segment::operator=(Segment&& o) noexcept {
  std::swap(base_, o.base_);
  std::swap(len_, o.len_);
  std::swap(name_, o.name_);
  std::swap(owner_, o.owner_);
  return *this;
}

Segment::~Segment() {
  if (owner_) unlinkName();
  if (base_) munmap(base_, len_);
}

void Segment::unlinkName() {
  if (!name_.empty()) shm_unlink(name_.c_str());
  name_.clear();
}

static core::Result<char*> mapFd(int fd, size_t len, const std::string& name) {
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED)
    return core::errnoStatus("mmap", errno, Layer::kLibrary).prepend("mapping " + name);
  return static_cast<char*>(p);
}

core::Result<Segment> Segment::create(const std::string& name, int nranks) {
  shm_unlink(name.c_str());  // a stale segment of a crashed run with the same name
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return core::errnoStatus("shm_open", errno, Layer::kLibrary).prepend(name);
  size_t len = segmentBytes(nranks);
  if (ftruncate(fd, static_cast<off_t>(len)) != 0) {
    Status s = core::errnoStatus("ftruncate", errno, Layer::kLibrary);
    ::close(fd);
    shm_unlink(name.c_str());
    return s.prepend(fmt::format("sizing {} to {} B (is /dev/shm large enough?)", name, len));
  }
  Segment seg;
  seg.name_ = name;
  seg.owner_ = true;
  seg.len_ = len;
  CCSCOPE_ASSIGN_OR_RETURN(seg.base_, mapFd(fd, len, name));
  auto* h = new (seg.base_) SegmentHeader{};
  h->magic = kSegMagic;
  h->nranks = static_cast<uint32_t>(nranks);
  h->pid = getpid();
  h->probe = kSegMagic ^ static_cast<uint32_t>(getpid());
  for (int s = 0; s < nranks; ++s) {
    Ring* r = new (seg.ring(s)) Ring;
    r->tail.store(0);
    r->fault.store(kNoFault);
  }
  return seg;
}

bool Segment::prefault(int src) const {
  char* begin = src < 0 ? base_ : reinterpret_cast<char*>(ring(src));
  const size_t len = src < 0 ? len_ : sizeof(Ring);
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  char* first = begin - (reinterpret_cast<uintptr_t>(begin) & (page - 1));  // its page's start
  const size_t span = static_cast<size_t>(begin + len - first);
#ifdef MADV_POPULATE_WRITE
  return madvise(first, span, MADV_POPULATE_WRITE) == 0;
#else
  return false;
#endif
}

bool prefaultFits(int nranks) {
  struct statvfs fs {};
  if (statvfs("/dev/shm", &fs) != 0) return false;
  const double free_bytes = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  return static_cast<double>(nranks) * static_cast<double>(segmentBytes(nranks)) <= free_bytes / 2;
}

core::Result<Segment> Segment::open(const std::string& name, int nranks) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return core::errnoStatus("shm_open", errno, Layer::kLibrary).prepend(name);
  Segment seg;
  seg.len_ = segmentBytes(nranks);
  CCSCOPE_ASSIGN_OR_RETURN(seg.base_, mapFd(fd, seg.len_, name));
  if (seg.header()->magic != kSegMagic || seg.header()->nranks != static_cast<uint32_t>(nranks))
    return Status(Code::kInternal,
                  fmt::format("{} is not a ccscope segment for {} ranks", name, nranks));
  return seg;
}

void Segment::ring_doorbell(bool force) const {
  SegmentHeader* h = header();
  std::atomic_thread_fence(std::memory_order_seq_cst);  // our ring update before the flag read
  if (!force && !h->sleeping.load(std::memory_order_relaxed)) return;
  h->doorbell.fetch_add(1, std::memory_order_seq_cst);
  if (h->sleeping.load(std::memory_order_seq_cst))
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&h->doorbell), FUTEX_WAKE, 1, nullptr, nullptr,
            0);
}

}  // namespace ccscope::transports::shm
