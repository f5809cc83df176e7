// The memory a ScheduleBackend runs on: send and receive buffers registered with the measured
// transport once per sweep and shared by the backends that take turns in it, and a scratch
// buffer of the backend's own that grows to what its largest prepared schedule needs.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "collectives/device_runtime.h"
#include "collectives/executor.h"
#include "core/host_memory.h"
#include "core/status.h"
#include "transports/transport.h"

namespace ccscope::collectives {

class BackendBuffers {
 public:
  explicit BackendBuffers(transports::Transport& t) : t_(&t) {}
  // Buffers on this GPU instead of host memory (before allocate); registered as CUDA memory.
  void setDevice(DeviceRuntime* d) { device_ = d; }

  // Send and receive buffers of max_bytes each (at least 64) on `pages`; scratch takes the same.
  core::Status allocate(size_t max_bytes, core::HostPages pages);
  // Instead of allocate(): other's send and receive buffers, when they are registered with the
  // same transport (their regions are valid here as they are) and hold max_bytes.
  bool share(const BackendBuffers& other, size_t max_bytes);
  // Grows scratch (outside any timed loop) to at least `bytes`.
  core::Status ensureScratch(size_t bytes);
  // "" or the line saying huge pages were asked for and not granted.
  std::string allocationNote() const;

  bool allocated() const { return send_ != nullptr; }
  size_t capacity() const { return send_ ? send_->size() : 0; }  // bytes of each
  char* send() const { return send_ ? send_->data() : nullptr; }
  char* recv() const { return recv_ ? recv_->data() : nullptr; }
  // Out of place: input is the send buffer, output the receive buffer. Allocated only.
  Buffers regions() const;
  // In place: input and output inside the receive buffer, at these byte offsets.
  core::Result<Buffers> inPlace(size_t in_offset, size_t out_offset) const;

 private:
  // Host or device memory and its registration, destroyed registration first.
  struct Registered {
    core::HostBuffer buf;
    DeviceRuntime* device = nullptr;  // set: the memory is dev, on this GPU
    char* dev = nullptr;
    size_t dev_len = 0;
    transports::Registration reg;
    Registered() = default;
    Registered(const Registered&) = delete;
    Registered& operator=(const Registered&) = delete;
    ~Registered() { release(); }
    char* data() const { return device ? dev : buf.data(); }
    size_t size() const { return device ? dev_len : buf.size(); }
    void release();
  };
  core::Status fill(Registered& r, size_t bytes, core::HostPages pages);
  transports::Transport* t_;
  DeviceRuntime* device_ = nullptr;
  core::HostPages pages_ = core::HostPages::kBase;  // as allocate() was asked; scratch too
  std::shared_ptr<Registered> send_, recv_;         // shared by the backends of one sweep
  Registered scratch_;
};

}  // namespace ccscope::collectives
