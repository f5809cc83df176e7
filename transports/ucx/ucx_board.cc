#include "transports/ucx/ucx_board.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <utility>

namespace ccscope::transports::ucx {

using core::Layer;
using core::Status;

namespace {

constexpr size_t kBoardBytes = sizeof(BoardHeader) + sizeof(uint32_t) * kBoardEntries;

uint32_t load(uint32_t& w) { return std::atomic_ref<uint32_t>(w).load(std::memory_order_acquire); }

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

core::Result<AbortBoard> AbortBoard::create(const std::string& name, int nranks) {
  AbortBoard b;
  b.name_ = name;
  b.len_ = kBoardBytes;
  shm_unlink(name.c_str());  // a stale board of a killed run with the same name
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return core::errnoStatus("shm_open", errno, Layer::kLibrary).prepend(name);
  b.owner_ = true;  // from here the destructor unlinks the name
  if (int err = posix_fallocate(fd, 0, static_cast<off_t>(b.len_)); err != 0) {
    ::close(fd);
    return core::errnoStatus("posix_fallocate", err, Layer::kLibrary).prepend(name);
  }
  void* p = mmap(nullptr, b.len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return core::errnoStatus("mmap", errno, Layer::kLibrary).prepend(name);
  b.base_ = static_cast<char*>(p);
  b.header()->entries = kBoardEntries;
  // The magic last: an opener that sees it sees the rest.
  std::atomic_ref<uint32_t>(b.header()->magic).store(kBoardMagic, std::memory_order_release);
  b.reported_.assign(static_cast<size_t>(nranks), false);
  return b;
}

AbortBoard AbortBoard::open(const std::string& name) {
  AbortBoard b;
  if (name.empty()) return b;
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return b;
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != kBoardBytes) {
    ::close(fd);
    return b;
  }
  void* p = mmap(nullptr, kBoardBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return b;
  auto* h = static_cast<BoardHeader*>(p);
  if (load(h->magic) != kBoardMagic || h->entries != kBoardEntries) {
    munmap(p, kBoardBytes);
    return b;
  }
  b.base_ = static_cast<char*>(p);
  b.len_ = kBoardBytes;
  b.name_ = name;
  return b;
}

bool AbortBoard::mark(int from) {
  if (!base_ || from < 0) return false;
  const uint32_t i =
      std::atomic_ref<uint32_t>(header()->marks).fetch_add(1, std::memory_order_acq_rel);
  if (i >= kBoardEntries) return false;
  std::atomic_ref<uint32_t>(*entry(i)).store(static_cast<uint32_t>(from) + 1,
                                             std::memory_order_release);
  return true;
}

std::vector<int> AbortBoard::newMarks() {
  std::vector<int> out;
  if (!base_) return out;
  const uint32_t claimed = std::min(load(header()->marks), kBoardEntries);
  // An entry claimed but not yet written (or whose marker died) is read again next call; the
  // ones after it are read now, so a dead marker hides no later mark.
  bool prefix = true;
  for (uint32_t i = seen_; i < claimed; ++i) {
    const uint32_t v = load(*entry(i));
    if (v == 0) {
      prefix = false;
      continue;
    }
    if (prefix) seen_ = i + 1;
    const size_t rank = v - 1;
    if (rank < reported_.size() && !reported_[rank]) {
      reported_[rank] = true;
      out.push_back(static_cast<int>(rank));
    }
  }
  return out;
}

}  // namespace ccscope::transports::ucx
