// The CUDA-IPC stream path through its seam: posts in a batch become stream work ordered by
// flags, so stream work the caller enqueues after the batch sees the message, and overwrites a
// source only once its reader copied it; waits on a peer that never comes are bounded; a peer
// that dies with its message half done releases the stream that waited on it.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <thread>

#include "tests/transports/cuda_ipc/seam_util.h"

namespace ccscope::transports::cuda_ipc {
namespace {

using conformance::RankContext;
using conformance::RankRunOptions;
using core::Code;
using core::Deadline;
using core::Status;

Status waitBoth(Transport& t, core::Result<Request>& a, core::Result<Request>& b,
                Deadline deadline) {
  if (!a || !b) return !a ? a.status() : b.status();
  Status sa = t.wait(*a, deadline);
  Status sb = t.wait(*b, deadline);
  return sa.isOk() ? sb : sa;
}

// A ring: each rank's source is filled on its stream just before the batch and overwritten on
// it just after; what it received is copied out on it just after. With stream items up to
// 200 us late, a copy that ran before its source was ready, or a source overwritten before its
// reader copied it, or a read before the message landed, shows as wrong bytes.
int ringBody(RankContext& c) {
  constexpr size_t kSizes[] = {8, 4096, 1 << 16, 3, 1 << 18};
  constexpr size_t kMax = 1 << 18;
  Transport& t = c.transport;
  const CudaIpcOps& ops = fake::startFakeGpu({});
  cudaStream_t s = rankStream();
  RANK_CHECK(c, t.caps().stream_ordered, "not on the stream path: " + t.setupNote());
  DeviceBuffer src(t, kMax), dst(t, kMax), fill(t, kMax), junk(t, kMax), seen(t, kMax);
  RANK_CHECK(c, src.reg.registered() && dst.reg.registered(), src.why + dst.why);
  const int right = (c.rank + 1) % c.size, left = (c.rank + c.size - 1) % c.size;
  conformance::fillPattern(junk.p, kMax, 999);
  for (int i = 0; i < 40; ++i) {
    const size_t len = kSizes[i % 5];
    conformance::fillPattern(fill.p, len,
                             static_cast<uint64_t>(i) * 16 + static_cast<uint64_t>(c.rank));
    ops.memcpy_async(src.p, fill.p, len, s);
    t.beginBatch();
    auto snd = t.postSend(right, 0x40 + i, src.reg.region(), 0, len);
    auto rcv = t.postRecv(left, 0x40 + i, dst.reg.region(), 0, len);
    Status st = t.endBatch();
    RANK_CHECK(c, st.isOk(), st.toString());
    ops.memcpy_async(src.p, junk.p, len, s);
    ops.memcpy_async(seen.p, dst.p, len, s);
    st = waitBoth(t, snd, rcv, c.deadline);
    RANK_CHECK(c, st.isOk(), st.toString());
    ops.stream_synchronize(s);
    const int64_t bad = conformance::firstMismatch(
        seen.p, len, static_cast<uint64_t>(i) * 16 + static_cast<uint64_t>(left));
    RANK_CHECK(c, bad < 0,
               fmt::format("message {} ({} B) from rank {}: wrong byte at {}", i, len, left, bad));
  }
  Status st = c.store.barrier("freeing", c.deadline);
  RANK_CHECK(c, st.isOk(), st.toString());
  return 0;
}

TEST_F(CudaIpcSeamTest, StreamPathOrdersCopiesAgainstTheCallersStreamWork) {
  fake::FakeGpuOptions gpu;
  gpu.max_delay_us = 200;
  std::string report = conformance::runRanks(ranks(3, gpu, 60, true), ringBody);
  EXPECT_TRUE(report.empty()) << report;
}

// One rank's driver lacks stream memory operations: every rank runs the host path, says so,
// and the ring still moves exact bytes.
TEST_F(CudaIpcSeamTest, OneRankWithoutStreamOperationsKeepsEveryRankOnTheHostPath) {
  RankRunOptions o = ranks(2, fake::FakeGpuOptions{}, 40, true);
  const std::string claim = fmt::format("/ccscope-fakegpu-{}-claim", prefix_);
  o.make = [claim](const TransportOptions& t) -> core::Result<std::unique_ptr<Transport>> {
    fake::FakeGpuOptions gpu;
    int fd = shm_open(claim.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);  // the first rank only
    gpu.stream_ops = fd < 0;
    if (fd >= 0) ::close(fd);
    const CudaIpcOps& ops = fake::startFakeGpu(gpu);
    TransportOptions mine = t;
    ops.stream_create(&rankStream());
    mine.cuda_stream = rankStream();
    return makeCudaIpcTransportOn(mine, ops);
  };
  std::string report = conformance::runRanks(o, [](RankContext& c) {
    const std::string note = c.transport.setupNote();
    RANK_CHECK(c, !c.transport.caps().stream_ordered, note);
    RANK_CHECK(c, note.find("host progress path") != std::string::npos, note);
    RANK_CHECK(c, note.find("stream memory operations") != std::string::npos, note);
    DeviceBuffer a(c.transport, 4096), b(c.transport, 4096);
    conformance::fillPattern(a.p, 4096, static_cast<uint64_t>(c.rank));
    auto r = c.transport.postRecv(1 - c.rank, 1, b.reg.region(), 0, 4096);
    auto s = c.transport.postSend(1 - c.rank, 1, a.reg.region(), 0, 4096);
    Status st = waitBoth(c.transport, s, r, c.deadline);
    RANK_CHECK(c, st.isOk(), st.toString());
    RANK_CHECK(c, conformance::firstMismatch(b.p, 4096, static_cast<uint64_t>(1 - c.rank)) < 0,
               "wrong bytes");
    return 0;
  });
  shm_unlink(claim.c_str());
  EXPECT_TRUE(report.empty()) << report;
}

// Ranks that disagree on a tag: both fail, each naming the other and the two tags, as on the
// host path, within a second.
TEST_F(CudaIpcSeamTest, StreamPathTagMismatchFailsBothSides) {
  std::string report =
      conformance::runRanks(ranks(2, fake::FakeGpuOptions{}, 40, true), [](RankContext& c) {
        DeviceBuffer a(c.transport, 4096);
        RANK_CHECK(c, a.reg.registered(), a.why);
        Transport& t = c.transport;
        const int64_t t0 = core::nowNs();
        t.beginBatch();
        auto q = c.rank == 0 ? t.postSend(1, 0x31, a.reg.region(), 0, 64)
                             : t.postRecv(0, 0x32, a.reg.region(), 0, 64);
        Status st = t.endBatch();
        RANK_CHECK(c, st.isOk(), st.toString());
        st = q ? t.wait(*q, Deadline::afterSeconds(5)) : q.status();
        RANK_CHECK(c, st.code() == Code::kRemoteError, st.toString());
        RANK_CHECK(c, st.peer() == 1 - c.rank, st.toString());
        RANK_CHECK(
            c,
            st.toString().find("expected tag 0x32 from rank 0 but got 0x31") != std::string::npos,
            st.toString());
        RANK_CHECK(c, secondsSince(t0) < 1.0, fmt::format("{:.1f} s", secondsSince(t0)));
        return 0;
      });
  EXPECT_TRUE(report.empty()) << report;
}

// Rank 1 is alive but posts nothing for 3 s: rank 0's batch gives its receive up after the op
// timeout (1 s), naming rank 1; rank 1 then finds the pair aborted at once.
int silentSenderBody(RankContext& c) {
  DeviceBuffer a(c.transport, 4096);
  RANK_CHECK(c, a.reg.registered(), a.why);
  Transport& t = c.transport;
  if (c.rank == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    const int64_t t0 = core::nowNs();
    auto r = t.postRecv(0, 7, a.reg.region(), 0, 64);
    Status st = r ? t.wait(*r, Deadline::afterSeconds(5)) : r.status();
    // Rank 0's abort, or its exit, whichever this rank reads first.
    RANK_CHECK(c, (st.code() == Code::kAborted || st.code() == Code::kPeerClosed) && st.peer() == 0,
               st.toString());
    RANK_CHECK(c, secondsSince(t0) < 0.5, fmt::format("{:.1f} s", secondsSince(t0)));
    return 0;
  }
  const int64_t t0 = core::nowNs();
  t.beginBatch();
  auto r = t.postRecv(1, 7, a.reg.region(), 0, 64);
  Status st = t.endBatch();
  RANK_CHECK(c, st.isOk(), st.toString());
  st = r ? t.wait(*r, Deadline::afterSeconds(5)) : r.status();
  RANK_CHECK(c, st.code() == Code::kDeadlineExceeded && st.peer() == 1, st.toString());
  const double took = secondsSince(t0);
  RANK_CHECK(c, took > 0.9 && took < 2.0, fmt::format("gave up after {:.1f} s", took));
  return 0;
}

TEST_F(CudaIpcSeamTest, StreamPathWaitForAPeerThatNeverPostsIsBoundedByTheOpTimeout) {
  RankRunOptions o = ranks(2, fake::FakeGpuOptions{}, 40, true);
  o.options.op_timeout_s = 1;
  o.final_barrier = false;
  std::string report = conformance::runRanks(o, silentSenderBody);
  EXPECT_TRUE(report.empty()) << report;
}

// Rank 1 announces a message whose source its stream never marks ready (its stream is held),
// then is killed. Rank 0's stream already waits for that flag: rank 0 notices the death, its
// receive fails naming rank 1, its stream drains, and teardown is quick.
int diesMidMessageBody(RankContext& c) {
  Transport& t = c.transport;
  const CudaIpcOps& ops = fake::startFakeGpu({});
  DeviceBuffer a(t, 4096), hold(t, 64);
  RANK_CHECK(c, a.reg.registered(), a.why);
  if (c.rank == 1) {
    std::memset(hold.p, 0, 64);
    ops.stream_wait_value32(rankStream(), hold.p, 1);  // never written: the stream stops here
    t.beginBatch();
    auto q = t.postSend(0, 9, a.reg.region(), 0, 256);
    Status st = t.endBatch();
    RANK_CHECK(c, q && st.isOk(), st.toString());
    RANK_CHECK(c, c.store.put("announced", "1").isOk(), "put");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    raise(SIGKILL);
  }
  RANK_CHECK(c, c.store.get("announced", c.deadline).isOk(), "rank 1 never announced");
  t.beginBatch();
  auto r = t.postRecv(1, 9, a.reg.region(), 0, 256);
  Status st = t.endBatch();
  RANK_CHECK(c, st.isOk(), st.toString());
  const int64_t t0 = core::nowNs();
  st = r ? t.wait(*r, Deadline::afterSeconds(5)) : r.status();
  RANK_CHECK(c, st.code() == Code::kPeerClosed && st.peer() == 1, st.toString());
  RANK_CHECK(c, secondsSince(t0) < 1.5, fmt::format("noticed after {:.1f} s", secondsSince(t0)));
  const int64_t t1 = core::nowNs();
  ops.stream_synchronize(rankStream());
  a.release();
  t.close();
  RANK_CHECK(c, secondsSince(t1) < 1.0,
             fmt::format("draining and teardown took {:.1f} s", secondsSince(t1)));
  return 0;
}

TEST_F(CudaIpcSeamTest, StreamPathPeerThatDiesMidMessageReleasesTheWaitingStream) {
  RankRunOptions o = ranks(2, fake::FakeGpuOptions{}, 40, true);
  o.killed_rank = 1;
  o.final_barrier = false;
  std::string report = conformance::runRanks(o, diesMidMessageBody);
  EXPECT_TRUE(report.empty()) << report;
}

}  // namespace
}  // namespace ccscope::transports::cuda_ipc
