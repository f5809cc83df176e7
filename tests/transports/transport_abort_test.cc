// The conformance suite's abort, close and memory contract (transports/README.md, "Memory" and
// "Cancellation and abort"), for every transport: abortPeer with requests in flight both ways,
// the peer told of it, close(), posts that overrun their region, and memory kinds a transport
// does not move. Ranks are real processes; the suite is instantiated in
// transport_conformance_test.cc.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "tests/transports/conformance_fixture.h"

namespace ccscope::transports {
namespace {

using conformance::barrier;
using conformance::Buffer;
using conformance::checkData;
using conformance::contains;
using conformance::fillPattern;
using conformance::postStatus;
using conformance::RankContext;
using conformance::secondsSince;
using conformance::TransportConformanceTest;
using core::Code;
using core::Deadline;
using core::Status;

constexpr size_t kStuckBytes = size_t{64}
                               << 20;  // cannot complete while its peer does not progress
// Smaller, but still by single copy on shm (from 64 KiB), so it too waits for its peer.
constexpr size_t kSmall = size_t{1} << 20;
constexpr size_t kBothWaysBytes = 2 * (kStuckBytes + kSmall);

// Ranks 0 and 1 each post, toward the other, a large and a small receive and a large and a
// small send (the tags agree, so nothing but the abort fails them).
std::vector<Request> postBothWays(RankContext& c, Buffer& buf) {
  const int peer = 1 - c.rank;
  std::vector<Request> reqs;
  size_t off = 0;
  for (int i = 0; i < 4; ++i) {
    const bool send = i >= 2;
    const size_t len = i % 2 == 0 ? kStuckBytes : kSmall;
    const uint32_t tag = 0x500 + 16 * (send ? c.rank : peer) + i % 2;
    auto r = send ? c.transport.postSend(peer, tag, buf.mr, off, len)
                  : c.transport.postRecv(peer, tag, buf.mr, off, len);
    if (r.isOk()) reqs.push_back(*r);
    off += len;
  }
  return reqs;
}

// One message each way between `peer` and this rank, checked.
Status exchange(RankContext& c, int peer, Buffer& buf) {
  const uint32_t to = 0x600 + 8 * c.rank + peer, from = 0x600 + 8 * peer + c.rank;
  fillPattern(buf.at(0), 1 << 20, to);
  auto s = c.transport.postSend(peer, to, buf.mr, 0, 1 << 20);
  auto r = c.transport.postRecv(peer, from, buf.mr, 1 << 20, 1 << 20);
  if (!s.isOk() || !r.isOk()) return s.isOk() ? r.status() : s.status();
  Status st = conformance::waitAll(c.transport, {*s, *r}, c.deadline);
  if (!st.isOk()) return st;
  std::string bad = checkData(buf.at(1 << 20), 1 << 20, from);
  return bad.empty() ? Status::ok() : Status(Code::kWrongResults, bad);
}

// Rank 0 aborts rank 1 with four requests in flight each way: rank 0's fail at once with
// `aborted` and the reason; rank 1's fail within a second, never by a timeout; later posts
// between them fail at once; both still exchange with rank 2.
int abortBody(RankContext& c) {
  Transport& t = c.transport;
  Buffer buf(t, kBothWaysBytes);
  std::vector<Request> reqs = c.rank < 2 ? postBothWays(c, buf) : std::vector<Request>{};
  RANK_CHECK(c, c.rank == 2 || reqs.size() == 4, "a post failed");
  Status s = barrier(c, "posted");
  RANK_CHECK(c, s.isOk(), s.toString());
  if (c.rank == 0) {
    t.abortPeer(1, Status(Code::kAborted, "the test gave rank 1 up"));
    for (const Request& r : reqs) {
      RANK_CHECK(c, t.requests().finished(r), "a request still pending after abortPeer");
      s = t.requests().release(r);
      RANK_CHECK(c, s.code() == Code::kAborted && contains(s, "gave rank 1 up"), s.toString());
    }
  }
  s = barrier(c, "aborted");
  RANK_CHECK(c, s.isOk(), s.toString());
  if (c.rank == 1) {
    const int64_t t0 = core::nowNs();
    for (const Request& r : reqs) {
      s = t.wait(r, Deadline::afterSeconds(10));
      RANK_CHECK(c, s.code() == Code::kAborted || s.code() == Code::kPeerClosed, s.toString());
    }
    RANK_CHECK(c, secondsSince(t0) < 1, fmt::format("noticed after {:.2f} s", secondsSince(t0)));
  }
  if (c.rank < 2) {
    s = postStatus(t.postSend(1 - c.rank, 0x510, buf.mr, 0, 8));
    RANK_CHECK(c, !s.isOk() && s.code() != Code::kDeadlineExceeded, "later post: " + s.toString());
  }
  for (int peer = 0; peer < c.size; ++peer) {
    if (peer == c.rank || (c.rank < 2 && peer < 2)) continue;
    s = exchange(c, peer, buf);
    RANK_CHECK(c, s.isOk(), fmt::format("with rank {}: {}", peer, s.toString()));
  }
  return 0;
}

TEST_P(TransportConformanceTest, AbortPeerFailsBothSidesAndSparesTheOthers) {
  std::string report = conformance::runRanks(options(3), abortBody);
  EXPECT_TRUE(report.empty()) << report;
}

// With nothing of a send half-written toward it, the peer is told: its pending receive fails
// with `aborted` (tcp: an abort frame; shm: the fault word), not a closed connection.
int abortNoticeBody(RankContext& c) {
  Transport& t = c.transport;
  // UCX with peer error handling learns endpoint ids at connect (else an abort can fail an
  // assertion in the told side, transports/README.md): the run's line says so.
  const std::string note = t.setupNote();
  RANK_CHECK(c,
             note.find("peer error handling") == std::string::npos ||
                 note.find("remote endpoint ids at connect") != std::string::npos,
             note);
  Buffer buf(t, 8);
  auto r = t.postRecv(1 - c.rank, 0x520, buf.mr, 0, 8);
  RANK_CHECK(c, r.isOk(), r.status().toString());
  Status s = barrier(c, "posted");
  RANK_CHECK(c, s.isOk(), s.toString());
  if (c.rank == 0) t.abortPeer(1, Status(Code::kAborted, "the test gave rank 1 up"));
  const int64_t t0 = core::nowNs();
  s = t.wait(*r, Deadline::afterSeconds(10));
  RANK_CHECK(c, s.code() == Code::kAborted, s.toString());
  RANK_CHECK(c, c.rank == 0 || contains(s, "rank 0 aborted"), s.toString());
  RANK_CHECK(c, secondsSince(t0) < 1, fmt::format("noticed after {:.2f} s", secondsSince(t0)));
  return 0;
}

TEST_P(TransportConformanceTest, AbortPeerTellsThePeer) {
  std::string report = conformance::runRanks(options(2), abortNoticeBody);
  EXPECT_TRUE(report.empty()) << report;
}

// UCX: the notice alone, as ranks on different hosts get it (no abort board).
TEST_P(TransportConformanceTest, AbortPeerTellsThePeerWithoutABoard) {
  if (std::string(GetParam().name) != "ucx") GTEST_SKIP() << "only UCX has abort boards";
  setenv("CCSCOPE_UCX_ABORT_BOARD", "0", 1);
  std::string report = conformance::runRanks(options(2), abortNoticeBody);
  unsetenv("CCSCOPE_UCX_ABORT_BOARD");
  EXPECT_TRUE(report.empty()) << report;
}

// Rank 0 posts many sends toward rank 1's receives (over UCX's shared memory: rendezvous
// requests that fill rank 1's FIFO), aborts rank 1 while rank 1 does not progress, then stops
// progressing itself (a store barrier) until rank 1 is done: rank 1's receives still end
// promptly, whichever arrived intact first, none waiting for its deadline.
int idleAborterBody(RankContext& c) {
  Transport& t = c.transport;
  constexpr size_t kCount = 200, kLen = size_t{128} << 10;
  Buffer buf(t, kCount * kLen);
  std::vector<Request> reqs;
  Status s = barrier(c, "start");
  RANK_CHECK(c, s.isOk(), s.toString());
  for (size_t i = 0; i < kCount; ++i) {
    const auto tag = static_cast<uint32_t>(0x700 + i);
    auto r = c.rank == 0 ? t.postSend(1, tag, buf.mr, i * kLen, kLen)
                         : t.postRecv(0, tag, buf.mr, i * kLen, kLen);
    RANK_CHECK(c, r.isOk(), r.status().toString());
    reqs.push_back(*r);
  }
  if (c.rank == 0) t.abortPeer(1, Status(Code::kAborted, "the test gave rank 1 up"));
  s = barrier(c, "aborted");
  RANK_CHECK(c, s.isOk(), s.toString());
  if (c.rank == 1) {
    const int64_t t0 = core::nowNs();
    s = conformance::waitAll(t, reqs, Deadline::afterSeconds(10));
    RANK_CHECK(c, s.code() == Code::kAborted || s.code() == Code::kPeerClosed, s.toString());
    RANK_CHECK(c, secondsSince(t0) < 1, fmt::format("noticed after {:.2f} s", secondsSince(t0)));
  }
  s = barrier(c, "told");
  RANK_CHECK(c, s.isOk(), s.toString());
  return 0;
}

TEST_P(TransportConformanceTest, AbortReachesThePeerWhileTheAbortingRankIsIdle) {
  std::string report = conformance::runRanks(options(2), idleAborterBody);
  EXPECT_TRUE(report.empty()) << report;
}

// close() with a receive and a large send pending: both fail; afterwards posts fail with one
// line, and progress, test, wait and a second close do nothing harmful.
int closeBody(RankContext& c) {
  Transport& t = c.transport;
  Buffer buf(t, kStuckBytes + 8);
  const int peer = 1 - c.rank;
  auto recv = t.postRecv(peer, 0x530, buf.mr, 0, 8);
  auto send = t.postSend(peer, 0x531 + c.rank, buf.mr, 8, kStuckBytes);
  RANK_CHECK(c, recv.isOk() && send.isOk(), "a post failed");
  Status s = barrier(c, "posted");
  RANK_CHECK(c, s.isOk(), s.toString());
  t.close();
  for (const Request& r : {*recv, *send}) {
    RANK_CHECK(c, t.test(r), "a request still pending after close()");
    s = t.wait(r, Deadline::afterSeconds(1));
    RANK_CHECK(c, s.code() == Code::kAborted && contains(s, "closed"), s.toString());
  }
  for (int dir = 0; dir < 2; ++dir) {
    s = postStatus(dir == 0 ? t.postSend(peer, 0x540, buf.mr, 0, 8)
                            : t.postRecv(peer, 0x540, buf.mr, 0, 8));
    RANK_CHECK(c, s.code() == Code::kInvalidArgument && contains(s, "after close()"), s.toString());
    RANK_CHECK(c, s.message().find('\n') == std::string::npos, s.toString());
  }
  s = t.progress();
  RANK_CHECK(c, s.isOk(), s.toString());
  RANK_CHECK(c, t.requests().inUse() == 0, "slots still in use after close()");
  t.close();
  return 0;
}

TEST_P(TransportConformanceTest, CloseFailsPendingRequestsAndLaterPosts) {
  std::string report = conformance::runRanks(options(2), closeBody);
  EXPECT_TRUE(report.empty()) << report;
}

// Posts that overrun their region (or a view of it) fail with invalid argument before the
// transport sees them; a view's offset is applied, so a message through views lands inside
// them.
int boundsBody(RankContext& c) {
  Transport& t = c.transport;
  Buffer buf(t, 64, conformance::kSentinel);
  const int peer = 1 - c.rank;
  auto view = buf.mr.slice(16, 16);
  RANK_CHECK(c, view.isOk(), view.status().toString());
  // The last two fit the registration but not the view.
  const std::vector<std::pair<size_t, size_t>> overruns = {
      {0, 65}, {60, 8}, {65, 0}, {1, SIZE_MAX}, {SIZE_MAX, 2}, {SIZE_MAX, 0}, {8, 16}, {17, 0}};
  for (const MemoryRegion* mr : {&buf.mr, &*view}) {
    for (auto [off, len] : overruns) {
      if (mr == &buf.mr && (off == 8 || off == 17)) continue;  // the view's own cases
      for (int dir = 0; dir < 2; ++dir) {
        Status s = postStatus(dir == 0 ? t.postSend(peer, 0x700, *mr, off, len)
                                       : t.postRecv(peer, 0x700, *mr, off, len));
        RANK_CHECK(c, s.code() == Code::kInvalidArgument && contains(s, "overrun"),
                   fmt::format("{} B at {} of {} B: {}", len, off, mr->len(), s.toString()));
      }
    }
  }
  Status s = postStatus(t.postSend(peer, 0x700, MemoryRegion(), 0, 8));
  RANK_CHECK(c, s.code() == Code::kInvalidArgument, "unregistered memory: " + s.toString());
  RANK_CHECK(c, t.requests().inUse() == 0, "a refused post took a request slot");
  if (c.rank == 0) fillPattern(view->base(), 16, 9);
  auto r =
      c.rank == 0 ? t.postSend(peer, 0x701, *view, 0, 16) : t.postRecv(peer, 0x701, *view, 0, 16);
  s = r.isOk() ? t.wait(*r, c.deadline) : r.status();
  RANK_CHECK(c, s.isOk(), s.toString());
  if (c.rank == 0) return 0;
  RANK_CHECK(c, checkData(buf.at(16), 16, 9).empty(), "the message missed its view");
  for (size_t k : {size_t{15}, size_t{32}})
    RANK_CHECK(c, *buf.at(k) == conformance::kSentinel, fmt::format("byte {} written", k));
  return 0;
}

TEST_P(TransportConformanceTest, PostsThatOverrunTheirRegionFail) {
  std::string report = conformance::runRanks(options(2), boundsBody);
  EXPECT_TRUE(report.empty()) << report;
}

// Memory of a kind the transport does not move is refused with one line naming what it moves;
// a registration that outlives its transport does nothing when it goes. No ranks needed.
TEST_P(TransportConformanceTest, UnsupportedMemoryKindIsRefused) {
  auto made = makeTransport(GetParam().name, options(1).options);
  ASSERT_TRUE(made.isOk()) << made.status().toString();
  std::vector<char> mem(64);
  auto cuda = (*made)->registerMemory(mem.data(), mem.size(), MemoryKind::kCuda, 0);
  ASSERT_FALSE(cuda.isOk());
  EXPECT_EQ(cuda.status().code(), Code::kInvalidArgument);
  const std::string want =
      fmt::format("{} cannot move cuda memory (it moves host)", GetParam().name);
  EXPECT_NE(cuda.status().message().find(want), std::string::npos) << cuda.status().toString();
  EXPECT_EQ(cuda.status().message().find('\n'), std::string::npos);
  auto host = (*made)->registerMemory(mem.data(), mem.size());
  ASSERT_TRUE(host.isOk()) << host.status().toString();
  Registration kept = std::move(*host);
  made->reset();  // the transport goes first
  EXPECT_TRUE(kept.registered());
  kept.reset();
  EXPECT_FALSE(kept.registered());
}

}  // namespace
}  // namespace ccscope::transports
