#include "collectives/backend_buffers.h"

#include <algorithm>

namespace ccscope::collectives {

using core::Status;

namespace {
constexpr size_t kMinBytes = 64;
constexpr size_t kMinScratchBytes = 4096;
}  // namespace

void BackendBuffers::Registered::release() {
  reg.reset();
  if (device && dev) device->release(dev);
  dev = nullptr;
  buf = core::HostBuffer();
}

// Memory of `bytes` (host pages or the GPU's), registered with the transport.
Status BackendBuffers::fill(Registered& r, size_t bytes, core::HostPages pages) {
  r.release();
  r.device = device_;
  if (device_) {
    CCSCOPE_ASSIGN_OR_RETURN(void* p, device_->allocate(bytes));
    r.dev = static_cast<char*>(p);
    r.dev_len = bytes;
    CCSCOPE_ASSIGN_OR_RETURN(
        r.reg, t_->registerMemory(r.dev, bytes, transports::MemoryKind::kCuda, device_->device()));
    return Status::ok();
  }
  CCSCOPE_ASSIGN_OR_RETURN(r.buf, core::HostBuffer::allocate(bytes, pages));
  CCSCOPE_ASSIGN_OR_RETURN(r.reg, t_->registerMemory(r.buf.data(), r.buf.size()));
  return Status::ok();
}

Status BackendBuffers::allocate(size_t max_bytes, core::HostPages pages) {
  const size_t bytes = std::max(max_bytes, kMinBytes);
  pages_ = pages;
  for (auto* which : {&send_, &recv_}) {
    auto rb = std::make_shared<Registered>();
    CCSCOPE_RETURN_IF_ERROR(fill(*rb, bytes, pages));
    *which = std::move(rb);
  }
  return Status::ok();
}

bool BackendBuffers::share(const BackendBuffers& other, size_t max_bytes) {
  if (other.t_ != t_ || other.device_ != device_ || !other.send_ ||
      other.capacity() < std::max(max_bytes, kMinBytes))
    return false;
  pages_ = other.pages_;
  send_ = other.send_;
  recv_ = other.recv_;
  return true;
}

std::string BackendBuffers::allocationNote() const {
  if (!send_ || device_) return "";
  return core::hugePageShortfall({&send_->buf, &recv_->buf}, pages_);
}

Status BackendBuffers::ensureScratch(size_t bytes) {
  if (bytes <= scratch_.size() && scratch_.data()) return Status::ok();
  return fill(scratch_, std::max(bytes, kMinScratchBytes), pages_);
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
