#include "collectives/backend_buffers.h"

#include <algorithm>

namespace ccscope::collectives {

using core::Status;

namespace {
constexpr size_t kMinBytes = 64;
constexpr size_t kMinScratchBytes = 4096;
}  // namespace

Status BackendBuffers::allocate(size_t max_bytes, core::HostPages pages) {
  const size_t bytes = std::max(max_bytes, kMinBytes);
  pages_ = pages;
  for (auto* which : {&send_, &recv_}) {
    auto rb = std::make_shared<Registered>();
    CCSCOPE_ASSIGN_OR_RETURN(rb->buf, core::HostBuffer::allocate(bytes, pages));
    CCSCOPE_ASSIGN_OR_RETURN(rb->reg, t_->registerMemory(rb->buf.data(), rb->buf.size()));
    *which = std::move(rb);
  }
  return Status::ok();
}

bool BackendBuffers::share(const BackendBuffers& other, size_t max_bytes) {
  if (other.t_ != t_ || !other.send_ || other.capacity() < std::max(max_bytes, kMinBytes))
    return false;
  pages_ = other.pages_;
  send_ = other.send_;
  recv_ = other.recv_;
  return true;
}

std::string BackendBuffers::allocationNote() const {
  if (!send_) return "";
  return core::hugePageShortfall({&send_->buf, &recv_->buf}, pages_);
}

Status BackendBuffers::ensureScratch(size_t bytes) {
  if (bytes <= scratch_.buf.size() && scratch_.buf.data()) return Status::ok();
  scratch_.reg.reset();
  CCSCOPE_ASSIGN_OR_RETURN(scratch_.buf,
                           core::HostBuffer::allocate(std::max(bytes, kMinScratchBytes), pages_));
  CCSCOPE_ASSIGN_OR_RETURN(scratch_.reg,
                           t_->registerMemory(scratch_.buf.data(), scratch_.buf.size()));
  return Status::ok();
}

Buffers BackendBuffers::regions() const {
  return Buffers{send_->reg.region(), recv_->reg.region(), scratch_.reg.region()};
}

core::Result<Buffers> BackendBuffers::inPlace(size_t in_offset, size_t out_offset) const {
  Buffers b = regions();
  CCSCOPE_ASSIGN_OR_RETURN(b.input, recv_->reg.region().from(in_offset));
  CCSCOPE_ASSIGN_OR_RETURN(b.output, recv_->reg.region().from(out_offset));
  return b;
}

}  // namespace ccscope::collectives
