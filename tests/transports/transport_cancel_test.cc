// The conformance suite's cancellation contract (transports/README.md, "Cancellation and
// abort"), for every transport: a timed-out receive cancelled by waitOrCancel, the sink it
// leaves in the matching order, a receive cancelled half-way, a send withdrawn before it
// started, and a send that partly left (its peer is aborted). Ranks are real processes; the
// suite is instantiated in transport_conformance_test.cc.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/transports/conformance_fixture.h"
#include "transports/shm/shm_segment.h"

namespace ccscope::transports {
namespace {

using conformance::barrier;
using conformance::Buffer;
using conformance::checkData;
using conformance::fillPattern;
using conformance::kSentinel;
using conformance::postStatus;
using conformance::RankContext;
using conformance::RankRunOptions;
using conformance::secondsSince;
using conformance::TransportConformanceTest;
using core::Code;
using core::Deadline;
using core::Status;

constexpr double kShortWait = 0.2;         // a wait that must time out
constexpr size_t kBig = size_t{64} << 20;  // larger than any socket buffer or shm ring

bool allSentinel(const char* p, size_t len) {
  for (size_t i = 0; i < len; ++i)
    if (p[i] != kSentinel) return false;
  return true;
}

// Rank 0's receive of tag `cancelled` times out and is cancelled (waitOrCancel). Rank 1 then
// sends `late` (when it equals `cancelled`, the late answer) and the tag 0x101 message. The
// late message never touches the cancelled buffer; the next receive gets its own message.
int cancelledReceiveBody(RankContext& c, uint32_t cancelled, bool late) {
  Transport& t = c.transport;
  Buffer buf(t, 64, kSentinel);
  if (c.rank == 1) {
    Status s = barrier(c, "cancelled");
    RANK_CHECK(c, s.isOk(), s.toString());
    fillPattern(buf.at(0), 32, 1);
    fillPattern(buf.at(32), 32, 2);
    std::vector<Request> reqs;
    for (uint32_t i = late ? 0 : 1; i < 2; ++i) {
      auto r = t.postSend(0, i == 0 ? cancelled : 0x101, buf.mr, size_t{32} * i, 32);
      RANK_CHECK(c, r.isOk(), r.status().toString());
      reqs.push_back(*r);
    }
    s = conformance::waitAll(t, reqs, c.deadline);
    RANK_CHECK(c, s.isOk(), s.toString());
    return 0;
  }
  auto r = t.postRecv(1, cancelled, buf.mr, 0, 32);
  RANK_CHECK(c, r.isOk(), r.status().toString());
  Status s = t.waitOrCancel(*r, Deadline::afterSeconds(kShortWait));
  RANK_CHECK(c, s.code() == Code::kDeadlineExceeded, s.toString());
  s = barrier(c, "cancelled");
  RANK_CHECK(c, s.isOk(), s.toString());
  auto next = t.postRecv(1, 0x101, buf.mr, 32, 32);
  s = next.isOk() ? t.wait(*next, c.deadline) : next.status();
  RANK_CHECK(c, s.isOk(), "the receive after the cancelled one: " + s.toString());
  RANK_CHECK(c, checkData(buf.at(32), 32, 2).empty(), "the next message arrived corrupted");
  RANK_CHECK(c, allSentinel(buf.at(0), 32), "the cancelled receive's buffer was written");
  // The sink's slot is free again once its late message was discarded (or it stepped aside).
  RANK_CHECK(c, t.requests().inUse() == 0,
             fmt::format("{} request slots still in use", t.requests().inUse()));
  return 0;
}

TEST_P(TransportConformanceTest, CancelledReceiveDiscardsItsLateMessage) {
  std::string report = conformance::runRanks(
      options(2), [](RankContext& c) { return cancelledReceiveBody(c, 0x100, true); });
  EXPECT_TRUE(report.empty()) << report;
}

TEST_P(TransportConformanceTest, CancelledReceiveStepsAsideForAnotherTag) {
  std::string report = conformance::runRanks(
      options(2), [](RankContext& c) { return cancelledReceiveBody(c, 0x100, false); });
  EXPECT_TRUE(report.empty()) << report;
}

// Cancelling requests that already finished only releases them: the receive's data stays, the
// peer is not aborted, and the pair goes on exchanging.
int cancelFinishedBody(RankContext& c) {
  Transport& t = c.transport;
  Buffer buf(t, 16, kSentinel);
  const int peer = 1 - c.rank;
  for (uint32_t round = 0; round < 2; ++round) {
    if (c.rank == 0) fillPattern(buf.at(0), 16, round);
    auto r = c.rank == 0 ? t.postSend(peer, 0x110 + round, buf.mr, 0, 16)
                         : t.postRecv(peer, 0x110 + round, buf.mr, 0, 16);
    RANK_CHECK(c, r.isOk(), r.status().toString());
    Status s = t.waitAny(std::span<const Request>(&*r, 1), c.deadline);
    RANK_CHECK(c, s.isOk(), s.toString());
    t.cancel(*r);
    RANK_CHECK(c, t.requests().inUse() == 0, "cancel of a finished request kept its slot");
    RANK_CHECK(c, t.requests().peerError(peer).isOk(), t.requests().peerError(peer).toString());
    if (c.rank == 1)
      RANK_CHECK(c, checkData(buf.at(0), 16, round).empty(), fmt::format("round {}", round));
  }
  return 0;
}

TEST_P(TransportConformanceTest, CancelOfAFinishedRequestOnlyReleasesIt) {
  std::string report = conformance::runRanks(options(2), cancelFinishedBody);
  EXPECT_TRUE(report.empty()) << report;
}

// Rank 1 posts a large send and stops progressing, so only what fits on the way (socket
// buffers, the shm ring) leaves; rank 0 receives that much and cancels. Nothing is written after
// cancel returns, the rest of the message is discarded (the slot is freed once it was, while
// rank 0 keeps progressing), and the next message arrives intact.
int halfWayBody(RankContext& c) {
  Transport& t = c.transport;
  Buffer big(t, kBig, kSentinel), small(t, 64, kSentinel);
  if (c.rank == 1) {
    fillPattern(big.at(0), kBig, 3);
    fillPattern(small.at(0), 64, 4);
    auto a = t.postSend(0, 0x120, big.mr, 0, kBig);
    Status s = barrier(c, "posted");
    s = s.isOk() ? barrier(c, "cancelled") : s;
    auto b = t.postSend(0, 0x121, small.mr, 0, 64);
    RANK_CHECK(c, a.isOk() && b.isOk(), postStatus(a).toString() + postStatus(b).toString());
    s = s.isOk() ? conformance::waitAll(t, {*a, *b}, c.deadline) : s;
    RANK_CHECK(c, s.isOk(), s.toString());
    return 0;
  }
  auto r = t.postRecv(1, 0x120, big.mr, 0, kBig);
  Status s = barrier(c, "posted");
  RANK_CHECK(c, r.isOk() && s.isOk(), postStatus(r).toString() + s.toString());
  const Deadline some = Deadline::afterSeconds(30);
  bool finished = false;
  while (!finished && t.requests().at(*r).bytes == 0 && !some.expired()) finished = t.test(*r);
  const size_t got = t.requests().at(*r).bytes;
  RANK_CHECK(c, !finished && got > 0 && got < kBig,
             fmt::format("cannot catch the receive half-way: {} of {} B", got, kBig));
  t.cancel(*r);
  const std::vector<char> at_cancel = big.data;
  s = barrier(c, "cancelled");
  RANK_CHECK(c, s.isOk(), s.toString());
  auto next = t.postRecv(1, 0x121, small.mr, 0, 64);
  s = next.isOk() ? t.wait(*next, c.deadline) : next.status();
  RANK_CHECK(c, s.isOk(), "the message after the cancelled one: " + s.toString());
  RANK_CHECK(c, checkData(small.at(0), 64, 4).empty(), "the next message arrived corrupted");
  // Striped over several streams, the next message may overtake the discarded rest.
  const Deadline drained = Deadline::afterSeconds(30);
  while (t.requests().inUse() > 0 && !drained.expired()) t.progress().ignore();
  RANK_CHECK(c, t.requests().inUse() == 0, "the cancelled receive's slot was never freed");
  RANK_CHECK(c, big.data == at_cancel, "the receive was written after cancel returned");
  return 0;
}

TEST_P(TransportConformanceTest, ReceiveCancelledHalfWayDiscardsTheRest) {
  if (lacks("partial-progress")) GTEST_SKIP() << "moves a message whole: no half-way to catch";
  RankRunOptions o = options(2);
  // shm: through the ring's slots, so the receive moves in steps (single copy is one step).
  o.options.single_copy_from = size_t{1} << 40;
  std::string report = conformance::runRanks(o, halfWayBody);
  EXPECT_TRUE(report.empty()) << report;
}

// Rank 0 fills the way to rank 1 (more small messages than the shm ring holds, then one larger
// than a socket buffer), so a send posted behind them has not started; it is cancelled and
// withdrawn: rank 1 receives everything else, and the message after it, intact.
int withdrawBody(RankContext& c) {
  Transport& t = c.transport;
  constexpr uint32_t kSmall = 2 * shm::kSlots;
  Buffer big(t, kBig), small(t, size_t{16} * (kSmall + 2));
  std::vector<Request> reqs;
  auto post = [&](uint32_t tag, const MemoryRegion& mr, size_t off, size_t len) {
    if (c.rank == 0) fillPattern(mr.base() + off, len, tag);
    auto r = c.rank == 0 ? t.postSend(1, tag, mr, off, len) : t.postRecv(0, tag, mr, off, len);
    if (r.isOk()) reqs.push_back(*r);
    return r;
  };
  if (c.rank == 1) {
    Status s = barrier(c, "withdrawn");
    RANK_CHECK(c, s.isOk(), s.toString());
  }
  for (uint32_t i = 0; i < kSmall; ++i)
    RANK_CHECK(c, post(0x200 + i, small.mr, size_t{16} * i, 16).isOk(), "small message");
  RANK_CHECK(c, post(0x300, big.mr, 0, kBig).isOk(), "large message");
  if (c.rank == 0) {
    auto victim = t.postSend(1, 0x301, small.mr, size_t{16} * kSmall, 16);
    RANK_CHECK(c, victim.isOk(), victim.status().toString());
    t.cancel(*victim);
    RANK_CHECK(c, t.requests().peerError(1).isOk(),
               "withdrawing a send that had not started aborted the peer: " +
                   t.requests().peerError(1).toString());
    Status s = barrier(c, "withdrawn");
    RANK_CHECK(c, s.isOk(), s.toString());
  }
  RANK_CHECK(c, post(0x302, small.mr, size_t{16} * (kSmall + 1), 16).isOk(), "the next message");
  Status s = conformance::waitAll(t, reqs, c.deadline);
  RANK_CHECK(c, s.isOk(), s.toString());
  RANK_CHECK(c, t.requests().inUse() == 0, "the withdrawn send's slot was never freed");
  if (c.rank == 0) return 0;
  for (uint32_t i = 0; i < kSmall; ++i)
    RANK_CHECK(c, checkData(small.at(size_t{16} * i), 16, 0x200 + i).empty(),
               fmt::format("message {}", i));
  RANK_CHECK(c, checkData(big.at(0), kBig, 0x300).empty(), "the large message");
  RANK_CHECK(c, checkData(small.at(size_t{16} * (kSmall + 1)), 16, 0x302).empty(),
             "the next message");
  return 0;
}

TEST_P(TransportConformanceTest, SendCancelledBeforeItStartedIsWithdrawn) {
  if (lacks("withdraw-send")) GTEST_SKIP() << "cannot take back a send it accepted (aborts)";
  std::string report = conformance::runRanks(options(2), withdrawBody);
  EXPECT_TRUE(report.empty()) << report;
}

// Rank 0 cancels a large send that partly left (tcp: part of it is in the socket; shm: it is
// published for a single copy rank 1 has not made). It cannot be taken back, so rank 1 is
// aborted: rank 0's later posts to it fail at once, and rank 1's receive of it fails promptly
// (an abort or a closed connection, not a timeout).
int partlyLeftBody(RankContext& c) {
  Transport& t = c.transport;
  Buffer big(t, kBig, kSentinel);
  if (c.rank == 0) {
    fillPattern(big.at(0), kBig, 5);
    auto r = t.postSend(1, 0x400, big.mr, 0, kBig);
    RANK_CHECK(c, r.isOk(), r.status().toString());
    t.cancel(*r);
    Status s = postStatus(t.postSend(1, 0x401, big.mr, 0, 8));
    RANK_CHECK(c, s.code() == Code::kAborted, "a post after the abort: " + s.toString());
    RANK_CHECK(c, t.requests().inUse() == 0, "the cancelled send's slot was never freed");
    s = barrier(c, "cancelled");
    RANK_CHECK(c, s.isOk(), s.toString());
    return 0;
  }
  Status s = barrier(c, "cancelled");
  RANK_CHECK(c, s.isOk(), s.toString());
  const int64_t t0 = core::nowNs();
  auto r = t.postRecv(0, 0x400, big.mr, 0, kBig);
  s = r.isOk() ? t.wait(*r, Deadline::afterSeconds(10)) : r.status();
  RANK_CHECK(c, s.code() == Code::kAborted || s.code() == Code::kPeerClosed, s.toString());
  RANK_CHECK(c, secondsSince(t0) < 1, fmt::format("noticed after {:.2f} s", secondsSince(t0)));
  s = postStatus(t.postRecv(0, 0x402, big.mr, 0, 8));
  RANK_CHECK(c, !s.isOk() && s.code() != Code::kDeadlineExceeded, "a later post: " + s.toString());
  return 0;
}

TEST_P(TransportConformanceTest, CancelOfASendThatPartlyLeftAbortsThePeer) {
  std::string report = conformance::runRanks(options(2), partlyLeftBody);
  EXPECT_TRUE(report.empty()) << report;
}

// Rank 0 blocks its first connection to rank 1 with messages too small to stripe, then posts
// one just large enough to stripe over every stream (tcp with several: its other parts leave at
// once, its first waits) and cancels it. Whichever the transport decides, withdrawn or peer
// aborted, rank 1 never receives a torn message: either everything else arrives intact or its
// receives fail promptly with the abort.
int otherStreamBody(RankContext& c) {
  Transport& t = c.transport;
  constexpr size_t kFill = 200, kFillLen = size_t{128} << 10, kStriped = size_t{256} << 10;
  Buffer fill(t, kFill * kFillLen), two(t, 2 * kStriped);
  std::vector<Request> reqs;
  for (size_t i = 0; i < kFill; ++i) {
    if (c.rank == 0) fillPattern(fill.at(i * kFillLen), kFillLen, 0x800 + i);
    auto r = c.rank == 0 ? t.postSend(1, 0x800 + i, fill.mr, i * kFillLen, kFillLen)
                         : t.postRecv(0, 0x800 + i, fill.mr, i * kFillLen, kFillLen);
    RANK_CHECK(c, r.isOk(), r.status().toString());
    reqs.push_back(*r);
  }
  if (c.rank == 0) {
    fillPattern(two.at(kStriped), kStriped, 0x901);
    auto cancelled = t.postSend(1, 0x900, two.mr, 0, kStriped);
    RANK_CHECK(c, cancelled.isOk(), cancelled.status().toString());
    t.cancel(*cancelled);
  }
  const bool aborted = c.rank == 0 && !t.requests().peerError(1).isOk();
  auto next = c.rank == 0 ? t.postSend(1, 0x901, two.mr, kStriped, kStriped)
                          : t.postRecv(0, 0x901, two.mr, kStriped, kStriped);
  if (next.isOk()) reqs.push_back(*next);
  Status s = c.rank == 0 ? c.store.put("other-stream.aborted", aborted ? "1" : "0") : Status();
  RANK_CHECK(c, s.isOk(), s.toString());
  auto verdict = c.store.get("other-stream.aborted", c.deadline);
  RANK_CHECK(c, verdict.isOk(), verdict.status().toString());
  s = conformance::waitAll(t, reqs, Deadline::afterSeconds(30));
  if (*verdict == "1") {
    RANK_CHECK(c, s.code() == Code::kAborted || s.code() == Code::kPeerClosed, s.toString());
    return 0;
  }
  RANK_CHECK(c, s.isOk(), "after a send was withdrawn: " + s.toString());
  if (c.rank == 1)
    RANK_CHECK(c, checkData(two.at(kStriped), kStriped, 0x901).empty(), "the next message");
  return 0;
}

TEST_P(TransportConformanceTest, CancelledSendWithAPartOnAnotherStreamTearsNoMessage) {
  std::string report = conformance::runRanks(options(2), otherStreamBody);
  EXPECT_TRUE(report.empty()) << report;
}

}  // namespace
}  // namespace ccscope::transports
