// What the CUDA-IPC seam tests share: a fake device buffer registered with the rank's
// transport, and ranks on the fake GPU of fake_cuda.h, on the host path or the stream path.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "core/deadline.h"
#include "tests/transports/cuda_ipc/fake_cuda.h"
#include "tests/transports/rank_runner.h"

namespace ccscope::transports::cuda_ipc {

struct DeviceBuffer {
  DeviceBuffer(Transport& t, size_t n) : len(n), p(fake::fakeDeviceAlloc(n)) {
    auto r = t.registerMemory(p, n, MemoryKind::kCuda, 0);
    if (r)
      reg = std::move(*r);
    else
      why = r.status().toString();
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void release() {
    reg.reset();
    if (p) fake::fakeDeviceFree(p);
    p = nullptr;
  }
  size_t len;
  char* p;
  Registration reg;
  std::string why;
};

// The rank's stream on the stream path (set in each rank after fork); nullptr on the host path.
inline cudaStream_t& rankStream() {
  static cudaStream_t s = nullptr;
  return s;
}

class CudaIpcSeamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> n{0};
    prefix_ = fmt::format("{}x{}", getpid(), n.fetch_add(1));
    fake::setFakeGpuPrefix(prefix_);
  }
  void TearDown() override { fake::removeFakeGpuObjects(prefix_); }
  // `on_stream`: each rank gives the transport a stream of its own, as bench gives the compute
  // backend's, which puts every rank on the stream path where the fake GPU has its operations.
  static conformance::RankRunOptions ranks(int np, fake::FakeGpuOptions gpu, double timeout_s = 40,
                                           bool on_stream = false) {
    conformance::RankRunOptions o = conformance::localRanks("cuda-ipc", np, timeout_s);
    o.make = [gpu,
              on_stream](const TransportOptions& t) -> core::Result<std::unique_ptr<Transport>> {
      const CudaIpcOps& ops = fake::startFakeGpu(gpu);
      TransportOptions mine = t;
      if (on_stream) {
        ops.stream_create(&rankStream());
        mine.cuda_stream = rankStream();
      }
      return makeCudaIpcTransportOn(mine, ops);
    };
    return o;
  }
  std::string prefix_;
};

inline double secondsSince(int64_t t0) { return static_cast<double>(core::nowNs() - t0) / 1e9; }

}  // namespace ccscope::transports::cuda_ipc
