// The CUDA-IPC transport between rank processes on one GPU: messages of every size arrive whole
// and in order, a tag or length disagreement fails both sides, a cancelled receive is never
// written, and host memory is refused.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "tests/cuda/ipc/gpu_probe.h"
#include "tests/transports/rank_runner.h"

namespace ccscope::transports {
namespace {

using conformance::RankContext;
using core::Status;

// Device memory of `bytes`, registered; freed at the end of the rank's body.
struct DeviceBuf {
  char* p = nullptr;
  Registration reg;
  DeviceBuf(Transport& t, size_t bytes) {
    if (cudaMalloc(reinterpret_cast<void**>(&p), bytes) != cudaSuccess) return;
    auto r = t.registerMemory(p, bytes, MemoryKind::kCuda, 0);
    if (r) reg = std::move(*r);
  }
  ~DeviceBuf() {
    reg.reset();
    cudaFree(p);
  }
  DeviceBuf(const DeviceBuf&) = delete;
  DeviceBuf& operator=(const DeviceBuf&) = delete;
};

const std::vector<size_t> kSizes = {0, 1, 7, 4096, 65536 + 3, size_t{8} << 20};

// Rank 0 sends every size to each peer in order; each peer checks every byte.
int orderedMessages(RankContext& c) {
  const size_t max = kSizes.back();
  DeviceBuf dev(c.transport, max);
  RANK_CHECK(c, dev.reg.registered(), "registering device memory failed");
  std::vector<char> host(max);
  for (size_t i = 0; i < kSizes.size(); ++i) {
    const size_t len = kSizes[i];
    for (int peer = 1; peer < c.size; ++peer) {
      if (c.rank == 0) {
        conformance::fillPattern(host.data(), len, i * 100 + peer);
        RANK_CHECK(c, cudaMemcpy(dev.p, host.data(), len, cudaMemcpyDefault) == cudaSuccess, "h2d");
        auto s = c.transport.postSend(peer, 10 + i, dev.reg.region(), 0, len);
        RANK_CHECK(c, s.isOk(), s.status().toString());
        Status w = c.transport.wait(*s, c.deadline);
        RANK_CHECK(c, w.isOk(), w.toString());
      } else if (c.rank == peer) {
        auto r = c.transport.postRecv(0, 10 + i, dev.reg.region(), 0, max);
        RANK_CHECK(c, r.isOk(), r.status().toString());
        Status w = c.transport.wait(*r, c.deadline);
        RANK_CHECK(c, w.isOk(), w.toString());
        RANK_CHECK(c, cudaMemcpy(host.data(), dev.p, len, cudaMemcpyDefault) == cudaSuccess, "d2h");
        RANK_CHECK(c, conformance::firstMismatch(host.data(), len, i * 100 + peer) < 0,
                   "wrong bytes at size " + std::to_string(len));
      }
    }
  }
  return 0;
}

TEST(CudaIpcTransport, EverySizeArrivesWholeAndInOrder) {
  SKIP_WITHOUT_GPU();
  for (int np : {2, 4}) {
    EXPECT_EQ(conformance::runRanks(conformance::localRanks("cuda-ipc", np, 120), orderedMessages),
              "")
        << "np " << np;
  }
}

// A tag disagreement fails both sides with the application-layer sentence; so does a message
// longer than its receive.
int disagreements(RankContext& c) {
  DeviceBuf dev(c.transport, 4096);
  RANK_CHECK(c, dev.reg.registered(), "registering device memory failed");
  const int peer = 1 - c.rank;
  auto q = c.rank == 0 ? c.transport.postSend(peer, 0x12, dev.reg.region(), 0, 64)
                       : c.transport.postRecv(peer, 0x13, dev.reg.region(), 0, 64);
  RANK_CHECK(c, q.isOk(), q.status().toString());
  Status s = c.transport.wait(*q, c.deadline);
  RANK_CHECK(c, !s.isOk() && s.message().find("expected tag 0x13") != std::string::npos,
             "tag mismatch not reported: " + s.toString());
  auto l = c.rank == 0 ? c.transport.postSend(peer, 0x20, dev.reg.region(), 0, 2048)
                       : c.transport.postRecv(peer, 0x20, dev.reg.region(), 0, 1024);
  RANK_CHECK(c, l.isOk(), l.status().toString());
  s = c.transport.wait(*l, c.deadline);
  RANK_CHECK(c, !s.isOk() && s.message().find("expected at most 1024 B") != std::string::npos,
             "length disagreement not reported: " + s.toString());
  return 0;
}

TEST(CudaIpcTransport, TagAndLengthDisagreementsFailBothSides) {
  SKIP_WITHOUT_GPU();
  auto o = conformance::localRanks("cuda-ipc", 2, 60);
  o.final_barrier = false;  // the pair fails by design
  EXPECT_EQ(conformance::runRanks(o, disagreements), "");
}

// Host memory is refused at registration, naming what the transport moves.
int refusesHost(RankContext& c) {
  std::vector<char> host(64);
  auto r = c.transport.registerMemory(host.data(), host.size());
  RANK_CHECK(c, !r.isOk() && r.status().message().find("cuda") != std::string::npos,
             "host memory was accepted");
  return 0;
}

TEST(CudaIpcTransport, RefusesHostMemory) {
  SKIP_WITHOUT_GPU();
  EXPECT_EQ(conformance::runRanks(conformance::localRanks("cuda-ipc", 2, 60), refusesHost), "");
}

}  // namespace
}  // namespace ccscope::transports
