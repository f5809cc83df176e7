// The CUDA-IPC transport's protocol through its CUDA seam, on the fake GPU of fake_cuda.h, with
// ranks as real forked processes (tests/transports/rank_runner.h) and the real shm control
// channel. Each case is one way the transport failed on a GPU: a send that completed before
// its receiver had copied it (wrong bytes once the sender reused its buffer), a killed rank
// that held the others until their deadline, a teardown that waited on a closed or silent peer.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "core/deadline.h"
#include "tests/transports/cuda_ipc/seam_util.h"

namespace ccscope::transports::cuda_ipc {
namespace {

using conformance::RankContext;
using conformance::RankRunOptions;
using core::Code;
using core::Deadline;
using core::Status;

// Rank 0 sends every message from one buffer, refilling it with the next message's bytes as
// soon as the send completed; its peers check each message. Copies run up to 300 us late.
int reuseBody(RankContext& c) {
  constexpr size_t kSizes[] = {1, 7, 4096, 65536, 8};
  constexpr int kMessages = 150;
  DeviceBuffer buf(c.transport, 65536);
  RANK_CHECK(c, buf.reg.registered(), buf.why);
  Transport& t = c.transport;
  for (int i = 0; i < kMessages; ++i) {
    const size_t len = kSizes[i % 5];
    for (int peer = 1; peer < c.size; ++peer) {
      const uint64_t seed = static_cast<uint64_t>(i) * 31 + static_cast<uint64_t>(peer);
      if (c.rank == 0) {
        conformance::fillPattern(buf.p, len, seed);
        auto s = t.postSend(peer, 0x10, buf.reg.region(), 0, len);
        Status st = s ? t.wait(*s, c.deadline) : s.status();
        RANK_CHECK(c, st.isOk(), st.toString());
      } else if (c.rank == peer) {
        auto r = t.postRecv(0, 0x10, buf.reg.region(), 0, len);
        Status st = r ? t.wait(*r, c.deadline) : r.status();
        RANK_CHECK(c, st.isOk(), st.toString());
        const int64_t bad = conformance::firstMismatch(buf.p, len, seed);
        RANK_CHECK(c, bad < 0,
                   fmt::format("message {} ({} B): wrong byte at {}: the sender's buffer was "
                               "reused before the copy out of it ran",
                               i, len, bad));
      }
    }
  }
  // Buffers are freed together (as bench does), while every rank drives the transport.
  Status st = c.store.barrier("freeing", c.deadline);
  RANK_CHECK(c, st.isOk(), st.toString());
  return 0;
}

TEST_F(CudaIpcSeamTest, ASendCompletesOnlyAfterItsCopyRanWithLateCopies) {
  fake::FakeGpuOptions gpu;
  gpu.max_delay_us = 300;
  std::string report = conformance::runRanks(ranks(2, gpu), reuseBody);
  EXPECT_TRUE(report.empty()) << report;
}

TEST_F(CudaIpcSeamTest, ASendCompletesOnlyAfterItsCopyRanFourRanks) {
  fake::FakeGpuOptions gpu;
  gpu.max_delay_us = 200;
  std::string report = conformance::runRanks(ranks(4, gpu), reuseBody);
  EXPECT_TRUE(report.empty()) << report;
}

// The same on the stream path, with posts outside batches: a send finishes when its reader's
// "done" flag reached it, a receive when the event after its copy ran.
TEST_F(CudaIpcSeamTest, OnTheStreamPathASendCompletesOnlyAfterItsCopyRan) {
  fake::FakeGpuOptions gpu;
  gpu.max_delay_us = 300;
  std::string report = conformance::runRanks(ranks(3, gpu, 40, true), reuseBody);
  EXPECT_TRUE(report.empty()) << report;
}

// Exchanges one message each way between every pair, so each rank maps its peers' buffers.
Status exchangeAll(RankContext& c, DeviceBuffer& a, DeviceBuffer& b) {
  Transport& t = c.transport;
  for (int p = 0; p < c.size; ++p) {
    if (p == c.rank) continue;
    for (DeviceBuffer* x : {&a, &b}) {
      auto r = t.postRecv(p, 0x20, x->reg.region(), 1024, 512);
      auto s = t.postSend(p, 0x20, x->reg.region(), 0, 512);
      if (!r || !s) return !r ? r.status() : s.status();
      CCSCOPE_RETURN_IF_ERROR(t.wait(*s, c.deadline));
      CCSCOPE_RETURN_IF_ERROR(t.wait(*r, c.deadline));
    }
  }
  return Status::ok();
}

// The last rank is SIGKILLed once it mapped the others' buffers. The others learn it at once
// (not at their deadline), naming it, and their teardown waits on nobody.
int killBody(RankContext& c) {
  DeviceBuffer a(c.transport, 4096), b(c.transport, 4096);
  RANK_CHECK(c, a.reg.registered() && b.reg.registered(), a.why + b.why);
  Status s = exchangeAll(c, a, b);
  RANK_CHECK(c, s.isOk(), s.toString());
  const int victim = c.size - 1;
  if (c.rank == victim) raise(SIGKILL);
  Transport& t = c.transport;
  const int64_t t0 = core::nowNs();
  auto r = t.postRecv(victim, 0x21, a.reg.region(), 0, 8);
  s = r ? t.wait(*r, Deadline::afterSeconds(4)) : r.status();
  RANK_CHECK(c, s.code() == Code::kPeerClosed, "waiting on the killed rank: " + s.toString());
  RANK_CHECK(c, s.peer() == victim, s.toString());
  RANK_CHECK(c, secondsSince(t0) < 1.5,
             fmt::format("the killed rank was noticed only after {:.1f} s", secondsSince(t0)));
  const int64_t t1 = core::nowNs();
  a.release();
  b.release();
  t.close();
  RANK_CHECK(c, secondsSince(t1) < 1.0,
             fmt::format("teardown took {:.1f} s after a peer was killed", secondsSince(t1)));
  return 0;
}

TEST_F(CudaIpcSeamTest, AKilledRankIsNoticedAtOnceAndTeardownWaitsOnNobody) {
  for (bool on_stream : {false, true}) {
    RankRunOptions o = ranks(3, fake::FakeGpuOptions{}, 40, on_stream);
    o.killed_rank = 2;
    o.final_barrier = false;
    std::string report = conformance::runRanks(o, killBody);
    EXPECT_TRUE(report.empty()) << (on_stream ? "stream path: " : "host path: ") << report;
  }
}

// Rank 1 maps rank 0's buffers, closes its transport and leaves; rank 0 frees its buffers
// afterwards without waiting for answers from a rank that closed.
int closedPeerBody(RankContext& c) {
  DeviceBuffer a(c.transport, 4096), b(c.transport, 4096);
  RANK_CHECK(c, a.reg.registered() && b.reg.registered(), a.why + b.why);
  Status s = exchangeAll(c, a, b);
  RANK_CHECK(c, s.isOk(), s.toString());
  if (c.rank == 1) {
    c.transport.close();
    RANK_CHECK(c, c.store.put("closed", "1").isOk(), "put");
    return 0;
  }
  RANK_CHECK(c, c.store.get("closed", c.deadline).isOk(), "rank 1 never closed");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int64_t t0 = core::nowNs();
  a.release();
  b.release();
  RANK_CHECK(
      c, secondsSince(t0) < 0.5,
      fmt::format("freeing two buffers took {:.1f} s after their peer closed", secondsSince(t0)));
  return 0;
}

TEST_F(CudaIpcSeamTest, FreeingABufferDoesNotWaitOnAPeerThatClosed) {
  for (bool on_stream : {false, true}) {
    RankRunOptions o = ranks(2, fake::FakeGpuOptions{}, 40, on_stream);
    o.final_barrier = false;
    std::string report = conformance::runRanks(o, closedPeerBody);
    EXPECT_TRUE(report.empty()) << (on_stream ? "stream path: " : "host path: ") << report;
  }
}

// Rank 1 is alive but drives no progress for 4 s: rank 0 frees two buffers it mapped within
// its op timeout (1 s) in all, not a wait per buffer.
int silentPeerBody(RankContext& c) {
  DeviceBuffer a(c.transport, 4096), b(c.transport, 4096);
  RANK_CHECK(c, a.reg.registered() && b.reg.registered(), a.why + b.why);
  Status s = exchangeAll(c, a, b);
  RANK_CHECK(c, s.isOk(), s.toString());
  if (c.rank == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(4));
    return 0;
  }
  const int64_t t0 = core::nowNs();
  a.release();
  b.release();
  RANK_CHECK(c, secondsSince(t0) < 1.8,
             fmt::format("freeing two buffers a silent peer mapped took {:.1f} s (op timeout "
                         "1 s)",
                         secondsSince(t0)));
  return 0;
}

TEST_F(CudaIpcSeamTest, FreeingBuffersASilentPeerMappedIsBoundedByTheOpTimeout) {
  for (bool on_stream : {false, true}) {
    RankRunOptions o = ranks(2, fake::FakeGpuOptions{}, 40, on_stream);
    o.options.op_timeout_s = 1;
    std::string report = conformance::runRanks(o, silentPeerBody);
    EXPECT_TRUE(report.empty()) << (on_stream ? "stream path: " : "host path: ") << report;
  }
}

}  // namespace
}  // namespace ccscope::transports::cuda_ipc
