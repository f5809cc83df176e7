#include "transports/ucx/ucx_board.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <utility>

namespace ccscope::transports::ucx {

using core::Layer;
using core::Status;

namespace {

size_t boardBytes(int nranks) {
  return sizeof(BoardHeader) + sizeof(std::atomic<uint32_t>) * static_cast<size_t>(nranks);
}

}  // namespace

AbortBoard& AbortBoard::operator=(AbortBoard&& o) noexcept {
  if (this == &o) return *this;
  release();
  base_ = std::exchange(o.base_, nullptr);
  len_ = std::exchange(o.len_, 0);
  name_ = std::move(o.name_);
  owner_ = std::exchange(o.owner_, false);
  seen_ = o.seen_;
  reported_ = std::move(o.reported_);
  return *this;
}

AbortBoard::~AbortBoard() { release(); }

void AbortBoard::release() {
  if (base_) munmap(base_, len_);
  base_ = nullptr;
  unlinkName();
}

void AbortBoard::unlinkName() {
  if (owner_ && !name_.empty()) shm_unlink(name_.c_str());
  owner_ = false;
}

core::Result<AbortBoard> AbortBoard::create(int nranks) {
  std::random_device rd;
  const uint64_t nonce = (uint64_t{rd()} << 32) | rd();
  AbortBoard b;
  b.name_ = fmt::format("/ccscope-ucxab-{}-{:016x}", getpid(), nonce);
  b.len_ = boardBytes(nranks);
  int fd = shm_open(b.name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return core::errnoStatus("shm_open", errno, Layer::kLibrary).prepend(b.name_);
  b.owner_ = true;  // from here the destructor unlinks the name
  if (ftruncate(fd, static_cast<off_t>(b.len_)) != 0) {
    Status s = core::errnoStatus("ftruncate", errno, Layer::kLibrary).prepend(b.name_);
    ::close(fd);
    return s;
  }
  void* p = mmap(nullptr, b.len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return core::errnoStatus("mmap", errno, Layer::kLibrary).prepend(b.name_);
  b.base_ = static_cast<char*>(p);
  // A new file reads as zeros: no marks yet. The magic goes last, for an opener that checks it.
  b.header()->nranks = static_cast<uint32_t>(nranks);
  std::atomic_ref<uint32_t>(b.header()->magic).store(kBoardMagic, std::memory_order_release);
  b.reported_.assign(nranks, false);
  return b;
}

AbortBoard AbortBoard::open(const std::string& name, int nranks) {
  AbortBoard b;
  if (name.empty()) return b;
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return b;
  struct stat st {};
  const size_t len = boardBytes(nranks);
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != len) {
    ::close(fd);
    return b;
  }
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return b;
  auto* h = static_cast<BoardHeader*>(p);
  if (std::atomic_ref<uint32_t>(h->magic).load(std::memory_order_acquire) != kBoardMagic ||
      h->nranks != static_cast<uint32_t>(nranks)) {
    munmap(p, len);
    return b;
  }
  b.base_ = static_cast<char*>(p);
  b.len_ = len;
  b.name_ = name;
  return b;
}

void AbortBoard::mark(int from) {
  if (!base_ || from < 0 || static_cast<uint32_t>(from) >= header()->nranks) return;
  slot(from)->store(1, std::memory_order_release);
  header()->marks.fetch_add(1, std::memory_order_acq_rel);
}

std::vector<int> AbortBoard::newMarks() {
  std::vector<int> out;
  if (!base_) return out;
  const uint32_t now = header()->marks.load(std::memory_order_acquire);
  if (now == seen_) return out;
  seen_ = now;
  for (int r = 0; r < static_cast<int>(reported_.size()); ++r)
    if (!reported_[r] && slot(r)->load(std::memory_order_acquire) != 0) {
      reported_[r] = true;
      out.push_back(r);
    }
  return out;
}

}  // namespace ccscope::transports::ucx
