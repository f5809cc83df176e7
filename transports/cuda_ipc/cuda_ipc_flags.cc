#include "transports/cuda_ipc/cuda_ipc_flags.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace ccscope::transports::cuda_ipc {

using core::Layer;
using core::Status;

FlagSegment& FlagSegment::operator=(FlagSegment&& o) noexcept {
  if (this == &o) return *this;
  release();
  base_ = std::exchange(o.base_, nullptr);
  len_ = std::exchange(o.len_, 0);
  name_ = std::move(o.name_);
  owner_ = std::exchange(o.owner_, false);
  return *this;
}

size_t FlagSegment::bytesFor(int nranks) {
  const size_t page = 4096;
  const size_t raw = sizeof(PairOut) * static_cast<size_t>(nranks);
  return (raw + page - 1) / page * page;  // whole pages: cudaHostRegister maps pages
}

void FlagSegment::release() {
  if (base_) munmap(base_, len_);
  base_ = nullptr;
  unlinkName();
}

void FlagSegment::unlinkName() {
  if (owner_ && !name_.empty()) shm_unlink(name_.c_str());
  owner_ = false;
}

core::Result<FlagSegment> FlagSegment::create(const std::string& name, int nranks) {
  FlagSegment f;
  f.name_ = name;
  f.len_ = bytesFor(nranks);
  shm_unlink(name.c_str());  // a stale segment of a killed run with the same name
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return core::errnoStatus("shm_open", errno, Layer::kLibrary).prepend(name);
  f.owner_ = true;
  if (int err = posix_fallocate(fd, 0, static_cast<off_t>(f.len_)); err != 0) {
    ::close(fd);
    return core::errnoStatus("posix_fallocate", err, Layer::kLibrary).prepend(name);
  }
  void* p = mmap(nullptr, f.len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return core::errnoStatus("mmap", errno, Layer::kLibrary).prepend(name);
  f.base_ = static_cast<char*>(p);  // zero-filled: every counter starts at 0
  return f;
}

core::Result<FlagSegment> FlagSegment::open(const std::string& name, int nranks) {
  FlagSegment f;
  f.len_ = bytesFor(nranks);
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return core::errnoStatus("shm_open", errno, Layer::kLibrary).prepend(name);
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != f.len_) {
    ::close(fd);
    return Status(core::Code::kInvalidArgument,
                  fmt::format("{}: not a cuda-ipc flag segment for {} ranks", name, nranks))
        .withLayer(Layer::kLibrary);
  }
  void* p = mmap(nullptr, f.len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return core::errnoStatus("mmap", errno, Layer::kLibrary).prepend(name);
  f.base_ = static_cast<char*>(p);
  return f;
}

}  // namespace ccscope::transports::cuda_ipc
