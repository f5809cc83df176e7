// The conformance suite's failure contract, for every transport: tag mismatch, short receive,
// deadlines, a peer killed mid-transfer, a peer that exits after its sends. Ranks are real
// processes; the suite is instantiated in transport_conformance_test.cc.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <iterator>
#include <string>
#include <thread>

#include "tests/transports/conformance_fixture.h"

namespace ccscope::transports {
namespace {

using conformance::Buffer;
using conformance::contains;
using conformance::fillPattern;
using conformance::firstMismatch;
using conformance::kSentinel;
using conformance::RankContext;
using conformance::RankRunOptions;
using conformance::TransportConformanceTest;
using core::Code;
using core::Deadline;
using core::Status;

// Rank 0 sends tag 0x13 where rank 1 expects 0x12: rank 1's receive fails naming both, and
// rank 0 learns it too: its next exchange with rank 1 fails instead of hanging.
int tagMismatchBody(RankContext& c) {
  Buffer buf(c.transport, 64);
  Transport& t = c.transport;
  Deadline d = Deadline::afterSeconds(10);
  const std::string what = "expected tag 0x12 from rank 0 but got 0x13";
  if (c.rank == 1) {
    auto r = t.postRecv(0, 0x12, buf.mr, 0, 64);
    Status s = r.isOk() ? t.wait(*r, d) : r.status();
    RANK_CHECK(c, !s.isOk() && s.code() != Code::kDeadlineExceeded, s.toString());
    RANK_CHECK(c, contains(s, "rank 1 " + what), s.toString());
    RANK_CHECK(c, s.layer() == core::Layer::kApplication, s.toString());
    return 0;
  }
  auto r = t.postSend(1, 0x13, buf.mr, 0, 64);
  Status s = r.isOk() ? t.wait(*r, d) : r.status();
  RANK_CHECK(c, s.code() != Code::kDeadlineExceeded, s.toString());
  auto next = t.postRecv(1, 0x14, buf.mr, 0, 64);
  s = next.isOk() ? t.wait(*next, d) : next.status();
  RANK_CHECK(c, !s.isOk() && s.code() != Code::kDeadlineExceeded, s.toString());
  RANK_CHECK(c, contains(s, what), s.toString());
  return 0;
}

TEST_P(TransportConformanceTest, TagMismatchFailsBothSidesNamingThem) {
  std::string report = conformance::runRanks(options(2), tagMismatchBody);
  EXPECT_TRUE(report.empty()) << report;
}

// A 1000 B message into a 100 B receive: an error naming the sender, nothing written past the
// posted 100 B, and the sender is not left hanging.
int shortReceiveBody(RankContext& c) {
  Buffer buf(c.transport, 1000, kSentinel);
  Deadline d = Deadline::afterSeconds(10);
  if (c.rank == 0) {
    fillPattern(buf.at(0), 1000, 7);
    auto r = c.transport.postSend(1, 0x7, buf.mr, 0, 1000);
    Status s = r.isOk() ? c.transport.wait(*r, d) : r.status();
    RANK_CHECK(c, s.code() != Code::kDeadlineExceeded, s.toString());
    return 0;
  }
  auto r = c.transport.postRecv(0, 0x7, buf.mr, 0, 100);
  Status s = r.isOk() ? c.transport.wait(*r, d) : r.status();
  RANK_CHECK(c, !s.isOk() && s.code() != Code::kDeadlineExceeded, s.toString());
  RANK_CHECK(c, s.peer() == 0 || contains(s, "rank 0"), s.toString());
  for (size_t k = 100; k < 1000; ++k)
    RANK_CHECK(c, *buf.at(k) == kSentinel, fmt::format("the receive wrote byte {}", k));
  return 0;
}

TEST_P(TransportConformanceTest, ReceiveShorterThanSendFailsCleanly) {
  std::string report = conformance::runRanks(options(2), shortReceiveBody);
  EXPECT_TRUE(report.empty()) << report;
}

// A receive nobody sends times out on time, naming the peer; the request stays valid and
// completes once the message is finally sent.
int deadlineBody(RankContext& c) {
  Buffer buf(c.transport, 8);
  constexpr double kWait = 1.0, kSlack = 0.5;
  if (c.rank == 0) {
    auto r = c.transport.postRecv(1, 0x9, buf.mr, 0, 8);
    RANK_CHECK(c, r.isOk(), r.status().toString());
    int64_t t0 = core::nowNs();
    Status s = c.transport.wait(*r, Deadline::afterSeconds(kWait));
    double took = static_cast<double>(core::nowNs() - t0) / 1e9;
    RANK_CHECK(c, s.code() == Code::kDeadlineExceeded, s.toString());
    RANK_CHECK(c, took >= kWait && took < kWait + kSlack,
               fmt::format("returned after {:.3f} s", took));
    RANK_CHECK(c, contains(s, "waited") && contains(s, "for rank 1"), s.toString());
    Status b = c.store.barrier("deadline-passed", c.deadline);
    RANK_CHECK(c, b.isOk(), b.toString());
    s = c.transport.wait(*r, c.deadline);
    RANK_CHECK(c, s.isOk(), "after the late send: " + s.toString());
    return 0;
  }
  Status b = c.store.barrier("deadline-passed", c.deadline);
  RANK_CHECK(c, b.isOk(), b.toString());
  auto r = c.transport.postSend(0, 0x9, buf.mr, 0, 8);
  Status s = r.isOk() ? c.transport.wait(*r, c.deadline) : r.status();
  RANK_CHECK(c, s.isOk(), s.toString());
  return 0;
}

TEST_P(TransportConformanceTest, DeadlineExpiresOnTimeNamingThePeer) {
  std::string report = conformance::runRanks(options(2), deadlineBody);
  EXPECT_TRUE(report.empty()) << report;
}

// Rank 1 is SIGKILLed while a large message is moving; rank 0 gets peer-closed promptly on the
// pending receive from it, and later posts to it fail fast.
int peerDeathBody(RankContext& c) {
  constexpr size_t kLen = size_t{128} << 20;
  Buffer buf(c.transport, kLen);
  Transport& t = c.transport;
  if (c.rank == 1) {
    auto r = t.postRecv(0, 0x5, buf.mr, 0, kLen);
    RANK_CHECK(c, r.isOk(), r.status().toString());
    int64_t until = core::nowNs() + 2'000'000'000;
    while (core::nowNs() < until && t.requests().at(*r).bytes == 0) t.test(*r);
    raise(SIGKILL);
  }
  auto pending = t.postRecv(1, 0x6, buf.mr, 0, 8);
  RANK_CHECK(c, pending.isOk(), pending.status().toString());
  auto send = t.postSend(1, 0x5, buf.mr, 0, kLen);
  Status s = send.isOk() ? t.wait(*send, Deadline::afterSeconds(10)) : send.status();
  RANK_CHECK(c, s.isOk() || s.code() == Code::kPeerClosed, s.toString());
  int64_t t0 = core::nowNs();
  s = t.wait(*pending, Deadline::afterSeconds(10));
  RANK_CHECK(c, s.code() == Code::kPeerClosed, s.toString());
  RANK_CHECK(c, s.peer() == 1 || contains(s, "rank 1"), s.toString());
  RANK_CHECK(c, core::nowNs() - t0 < 5'000'000'000, "peer death noticed only after 5 s");
  auto late = t.postSend(1, 0x7, buf.mr, 0, 8);
  s = late.isOk() ? t.wait(*late, Deadline::afterSeconds(2)) : late.status();
  RANK_CHECK(c, s.code() == Code::kPeerClosed, "post after death: " + s.toString());
  return 0;
}

TEST_P(TransportConformanceTest, PeerKilledMidTransferGivesPeerClosed) {
  if (lacks("peer-death-notice"))
    GTEST_SKIP() << "no peer error handling: a killed peer is caught by the deadline";
  RankRunOptions o = options(2);
  o.killed_rank = 1;
  o.final_barrier = false;
  std::string report = conformance::runRanks(o, peerDeathBody);
  EXPECT_TRUE(report.empty()) << report;
}

// Rank 1 sends a few messages and exits as soon as its sends complete (as a rank does after its
// last collective). Rank 0 meanwhile waits for rank 2, which answers only once rank 1 is gone
// (its pid reaped) and 0.2 s more: rank 0 notices rank 1's exit while blocked (shm checks its
// peers every 50 ms; tcp sees the socket close), and only then posts its receives from rank 1.
// What rank 1 sent arrives intact; only a receive for something never sent fails, promptly,
// peer-closed.
int exitAfterSendBody(RankContext& c) {
  constexpr size_t kSizes[] = {8, 4096, 40000};
  Buffer buf(c.transport, 64 << 10);
  Transport& t = c.transport;
  if (c.rank == 1) {
    Status put = c.store.put("exit-after-send.pid", std::to_string(getpid()));
    RANK_CHECK(c, put.isOk(), put.toString());
    size_t off = 0;
    for (size_t i = 0; i < std::size(kSizes); ++i) {
      fillPattern(buf.at(off), kSizes[i], 100 + i);
      auto r = t.postSend(0, 0x40 + i, buf.mr, off, kSizes[i]);
      RANK_CHECK(c, r.isOk(), r.status().toString());
      Status s = t.wait(*r, Deadline::afterSeconds(10));
      RANK_CHECK(c, s.isOk(), s.toString());
      off += kSizes[i];
    }
    return 0;  // exits at once: no final barrier
  }
  if (c.rank == 2) {
    auto pid = c.store.get("exit-after-send.pid", Deadline::afterSeconds(10));
    RANK_CHECK(c, pid.isOk(), pid.status().toString());
    const pid_t one = static_cast<pid_t>(std::stol(*pid));
    const Deadline gone = Deadline::afterSeconds(10);
    while (!(kill(one, 0) != 0 && errno == ESRCH)) {  // the test process reaps it within 5 ms
      RANK_CHECK(c, !gone.expired(), "rank 1 was still running 10 s after its sends");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto r = t.postSend(0, 0x70, buf.mr, 0, 8);
    Status s = r.isOk() ? t.wait(*r, Deadline::afterSeconds(10)) : r.status();
    RANK_CHECK(c, s.isOk(), s.toString());
    return 0;
  }
  auto late = t.postRecv(2, 0x70, buf.mr, 0, 8);
  Status ls = late.isOk() ? t.wait(*late, Deadline::afterSeconds(10)) : late.status();
  RANK_CHECK(c, ls.isOk(), ls.toString());
  size_t off = 0;
  for (size_t i = 0; i < std::size(kSizes); ++i) {
    auto r = t.postRecv(1, 0x40 + i, buf.mr, off, kSizes[i]);
    RANK_CHECK(c, r.isOk(), r.status().toString());
    Status s = t.wait(*r, Deadline::afterSeconds(10));
    RANK_CHECK(c, s.isOk(),
               fmt::format("message {} sent before the peer exited: {}", i, s.toString()));
    RANK_CHECK(c, firstMismatch(buf.at(off), kSizes[i], 100 + i) < 0, "corrupted after exit");
    off += kSizes[i];
  }
  int64_t t0 = core::nowNs();
  auto never = t.postRecv(1, 0x50, buf.mr, 0, 8);
  Status s = never.isOk() ? t.wait(*never, Deadline::afterSeconds(10)) : never.status();
  RANK_CHECK(c, s.code() == Code::kPeerClosed, s.toString());
  RANK_CHECK(c, core::nowNs() - t0 < 5'000'000'000, "peer exit noticed only after 5 s");
  return 0;
}

TEST_P(TransportConformanceTest, MessagesSentBeforeAPeerExitsAreStillDelivered) {
  if (lacks("buffered-sends"))
    GTEST_SKIP() << "a send over the rendezvous threshold completes only once it was received";
  RankRunOptions o = options(3);
  o.final_barrier = false;
  std::string report = conformance::runRanks(o, exitAfterSendBody);
  EXPECT_TRUE(report.empty()) << report;
}

}  // namespace
}  // namespace ccscope::transports
