// Local steps (reduce, copy, scale) as requests, so that the executor waits on them as it waits
// on messages. The CPU backend finishes each at once with the vectorised kernels; a device
// backend enqueues a kernel on its stream and reports the step finished by event.
#pragma once

#include <cstdint>

#include "collectives/reduce_kernels.h"
#include "collectives/schedule.h"
#include "core/deadline.h"
#include "core/dtype.h"
#include "core/status.h"
#include "transports/memory.h"

namespace ccscope::collectives {

struct LocalStep {
  OpKind kind = OpKind::kCopy;  // kReduce, kCopy or kScale
  char* dst = nullptr;
  const char* a = nullptr;  // reduce: first operand; copy: source
  const char* b = nullptr;  // reduce: second operand
  uint64_t count = 0;       // elements
};

class ComputeBackend {
 public:
  virtual ~ComputeBackend() = default;
  virtual const char* name() const = 0;
  virtual transports::MemoryKinds memoryKinds() const = 0;
  // Steps run in order on the stream a stream-ordered transport uses: the executor counts a
  // step's dependents ready when it is enqueued.
  virtual bool streamOrdered() const { return false; }
  // Before the steps of one prepared schedule: the element type, the reduction, the ranks (avg).
  virtual core::Status bind(core::DataType dtype, core::ReduceOp op, int ranks) = 0;
  // Starts a step; true when it has already finished. `token` comes back from nextFinished.
  virtual core::Result<bool> start(const LocalStep& s, uint32_t token) = 0;
  virtual bool anyFinished() const { return false; }
  // A started step that finished since the last call (in any order); false when none.
  virtual bool nextFinished(uint32_t* /*token*/) { return false; }
  // The first error a started step met after start() returned (a kernel that faulted), once;
  // the executor fails the collective with it.
  virtual core::Status takeError() { return core::Status::ok(); }
  // Test-only fault injection: flips the lowest bit of the byte at p (in this backend's memory).
  virtual void flipLowBit(char* p) { *p = static_cast<char>(*p ^ 1); }
};

// The host's cores: every step finishes inside start().
class CpuCompute final : public ComputeBackend {
 public:
  const char* name() const override { return "cpu"; }
  transports::MemoryKinds memoryKinds() const override {
    return {transports::MemoryKind::kHost, transports::MemoryKind::kHostPinned};
  }
  core::Status bind(core::DataType dtype, core::ReduceOp op, int ranks) override;
  core::Result<bool> start(const LocalStep& s, uint32_t token) override;

 private:
  size_t elem_ = 1;
  int ranks_ = 1;
  ReduceFn reduce_ = nullptr;
  ScaleFn scale_ = nullptr;
};

}  // namespace ccscope::collectives
