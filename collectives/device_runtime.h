// The GPU a rank runs on, seen without any vendor header (collectives/ never includes one):
// device memory, the compute backend on the rank's stream, copies for the staged path, and marks
// on the stream for device-side timing. The CUDA implementation is collectives/device/.
#pragma once

#include <cstddef>
#include <string>

#include "collectives/compute.h"
#include "core/status.h"

namespace ccscope::collectives {

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  virtual int device() const = 0;  // ordinal in this process (after CUDA_VISIBLE_DEVICES)
  // "cuda:0 NVIDIA H200 (0000:18:00.0)": the table's line about where the buffers are.
  virtual std::string describe() const = 0;
  virtual core::Result<void*> allocate(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  // The reduction kernels on this rank's stream.
  virtual ComputeBackend& compute() = 0;
  // The rank's stream (a cudaStream_t) for kernels enqueued from elsewhere (the harness's
  // fills and checks), and a wait for all it holds.
  virtual void* stream() = 0;
  virtual core::Status synchronize() = 0;
  // A copy in either direction, waited for (the staged path, outside the executor).
  virtual core::Status copy(void* dst, const void* src, size_t bytes) = 0;
  // Page-locks host memory the staged path copies through (DMA without a bounce buffer).
  virtual core::Status pinHost(void* p, size_t bytes) = 0;
  virtual void unpinHost(void* p) = 0;
  // Records mark `index` on the rank's stream; elapsed time between two recorded marks after
  // the stream passed them.
  virtual core::Status mark(int index) = 0;
  virtual core::Result<double> elapsedUs(int from, int to) = 0;
  // Whether the stream has passed mark `index` (an error where CUDA reports one).
  virtual core::Result<bool> passed(int /*index*/) {
    return core::Status(core::Code::kUnsupported, "no marks to query on this device runtime");
  }
  // CUDA graphs (bench -G): what is enqueued on the stream between beginCapture() and
  // endCapture(true) becomes one graph; endCapture(false) ends a capture and keeps nothing (a
  // failed one). launchGraph() puts the graph on the stream without waiting; releaseGraph()
  // destroys it once its launches drained (a captured NCCL plan holds its communicator).
  virtual core::Status beginCapture() {
    return core::Status(core::Code::kUnsupported, "no CUDA graphs on this device runtime");
  }
  virtual core::Status endCapture(bool /*keep*/) { return beginCapture(); }
  virtual core::Status launchGraph() { return beginCapture(); }
  virtual void releaseGraph() {}
};

}  // namespace ccscope::collectives
