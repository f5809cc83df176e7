// The conformance suite every transport passes: FIFO matching, many outstanding requests,
// zero-length and very large messages, all-to-all traffic, and the failure contract (tag
// mismatch, short receive, deadlines, a peer killed mid-transfer). Ranks are real processes.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <iterator>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "tests/transports/rank_runner.h"

namespace ccscope::transports {
namespace {

using conformance::fillPattern;
using conformance::firstMismatch;
using conformance::RankContext;
using conformance::RankRunOptions;
using core::Code;
using core::Deadline;
using core::Status;

constexpr char kSentinel = 0x5a;  // bytes a receive must not touch

struct TransportCase {
  const char* name;
  int streams;
};
void PrintTo(const TransportCase& c, std::ostream* os) { *os << c.name << ":" << c.streams; }

// A registered buffer that lives as long as the body.
struct Buffer {
  std::vector<char> data;
  MemoryRegion mr;
  Buffer(Transport& t, size_t len, char fill = 0) : data(std::max<size_t>(len, 1), fill) {
    auto r = t.registerMemory(data.data(), len);
    CCSCOPE_CHECK(r.isOk(), r.status().toString());
    mr = *r;
  }
  char* at(size_t off) { return data.data() + off; }
};

bool contains(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

// Waits for every request in order; the first failure wins (the rest are still waited for).
Status waitAll(Transport& t, const std::vector<Request>& reqs, Deadline deadline) {
  Status first;
  for (const Request& r : reqs) {
    Status s = t.wait(r, deadline);
    if (first.isOk() && !s.isOk()) first = s;
  }
  return first;
}

std::string checkData(const char* buf, size_t len, uint64_t seed) {
  int64_t bad = firstMismatch(buf, len, seed);
  return bad < 0 ? "" : fmt::format("byte {} of {} differs (seed {})", bad, len, seed);
}

class TransportConformanceTest : public ::testing::TestWithParam<TransportCase> {
 protected:
  RankRunOptions options(int np) const {
    RankRunOptions o = conformance::localRanks(GetParam().name, np);
    o.options.streams = GetParam().streams;
    return o;
  }
};

// Rank 0 sends messages of many sizes and tags; rank 1 posts every receive (some longer than
// the message) before waiting, then checks each buffer and that nothing past a message changed.
int fifoBody(RankContext& c) {
  const std::vector<size_t> sizes = {0, 1, 7, 8, 64, 1000, 4096, 65537, 300000, (1 << 20) + 3};
  constexpr int kMessages = 120;
  constexpr size_t kSlack = 16;
  size_t total = 0;
  for (int i = 0; i < kMessages; ++i) total += sizes[i % sizes.size()] + kSlack;
  Buffer buf(c.transport, total, kSentinel);
  std::vector<Request> reqs;
  for (int i = 0, off = 0; i < kMessages;
       off += static_cast<int>(sizes[i % sizes.size()] + kSlack), ++i) {
    size_t len = sizes[i % sizes.size()];
    uint32_t tag = 0x1000 + i;
    if (c.rank == 0) fillPattern(buf.at(off), len, i);
    auto r = c.rank == 0
                 ? c.transport.postSend(1, tag, buf.mr, off, len)
                 : c.transport.postRecv(0, tag, buf.mr, off, len + (i % 3 == 0 ? kSlack : 0));
    RANK_CHECK(c, r.isOk(), r.status().toString());
    reqs.push_back(*r);
  }
  Status s = waitAll(c.transport, reqs, c.deadline);
  RANK_CHECK(c, s.isOk(), s.toString());
  if (c.rank == 0) return 0;
  for (int i = 0, off = 0; i < kMessages;
       off += static_cast<int>(sizes[i % sizes.size()] + kSlack), ++i) {
    size_t len = sizes[i % sizes.size()];
    std::string bad = checkData(buf.at(off), len, i);
    RANK_CHECK(c, bad.empty(), fmt::format("message {} ({} B): {}", i, len, bad));
    for (size_t k = 0; k < kSlack; ++k)
      RANK_CHECK(c, *buf.at(off + len + k) == kSentinel, fmt::format("message {} overran", i));
  }
  return 0;
}

TEST_P(TransportConformanceTest, FifoOrderAcrossManyTagsAndSizes) {
  std::string report = conformance::runRanks(options(2), fifoBody);
  EXPECT_TRUE(report.empty()) << report;
}

// Both ranks post 1000 receives and 1000 sends before waiting for any.
int manyOutstandingBody(RankContext& c) {
  constexpr int kEach = 1000;
  auto size = [](int i) { return static_cast<size_t>((i * 37) % 2000); };
  std::vector<size_t> offs(kEach + 1, 0);
  for (int i = 0; i < kEach; ++i) offs[i + 1] = offs[i] + size(i);
  Buffer out(c.transport, offs[kEach]), in(c.transport, offs[kEach]);
  int peer = 1 - c.rank;
  std::vector<Request> reqs;
  for (int i = 0; i < kEach; ++i) {
    auto r = c.transport.postRecv(peer, i, in.mr, offs[i], size(i));
    RANK_CHECK(c, r.isOk(), fmt::format("recv {}: {}", i, r.status().toString()));
    reqs.push_back(*r);
  }
  for (int i = 0; i < kEach; ++i) {
    fillPattern(out.at(offs[i]), size(i), c.rank * 100000 + i);
    auto r = c.transport.postSend(peer, i, out.mr, offs[i], size(i));
    RANK_CHECK(c, r.isOk(), fmt::format("send {}: {}", i, r.status().toString()));
    reqs.push_back(*r);
  }
  Status s = waitAll(c.transport, reqs, c.deadline);
  RANK_CHECK(c, s.isOk(), s.toString());
  for (int i = 0; i < kEach; ++i) {
    std::string bad = checkData(in.at(offs[i]), size(i), peer * 100000 + i);
    RANK_CHECK(c, bad.empty(), fmt::format("message {}: {}", i, bad));
  }
  return 0;
}

TEST_P(TransportConformanceTest, ThousandsOutstandingBothDirections) {
  std::string report = conformance::runRanks(options(2), manyOutstandingBody);
  EXPECT_TRUE(report.empty()) << report;
}

// Zero-length messages match, complete, carry their tag and write nothing, in both directions.
int zeroLengthBody(RankContext& c) {
  Buffer buf(c.transport, 64, kSentinel);
  Transport& t = c.transport;
  int peer = 1 - c.rank;
  const size_t lens[] = {0, 5, 0};
  std::vector<Request> reqs;
  for (uint32_t i = 0; i < 3; ++i) {
    if (c.rank == 0) fillPattern(buf.at(size_t{16} * i), lens[i], i);
    auto r = c.rank == 0 ? t.postSend(1, 0x20 + i, buf.mr, size_t{16} * i, lens[i])
                         : t.postRecv(0, 0x20 + i, buf.mr, size_t{16} * i, i == 2 ? 8 : lens[i]);
    RANK_CHECK(c, r.isOk(), r.status().toString());
    reqs.push_back(*r);
  }
  auto back =
      c.rank == 0 ? t.postRecv(peer, 0x30, buf.mr, 48, 0) : t.postSend(peer, 0x30, buf.mr, 48, 0);
  RANK_CHECK(c, back.isOk(), back.status().toString());
  reqs.push_back(*back);
  for (size_t i = 0; i < reqs.size(); ++i) {
    Status s = t.waitAny(std::span<const Request>(&reqs[i], 1), c.deadline);
    RANK_CHECK(c, s.isOk(), s.toString());
    size_t expect = i < 3 ? lens[i] : 0;
    size_t moved = t.requests().at(reqs[i]).bytes;
    RANK_CHECK(c, moved == expect,
               fmt::format("request {} moved {} B, expected {}", i, moved, expect));
    s = t.wait(reqs[i], c.deadline);
    RANK_CHECK(c, s.isOk(), s.toString());
  }
  if (c.rank == 1) {
    RANK_CHECK(c, checkData(buf.at(16), 5, 1).empty(), "5-byte message corrupted");
    for (size_t k : {size_t{0}, size_t{32}, size_t{48}})
      RANK_CHECK(c, *buf.at(k) == kSentinel, fmt::format("zero-length receive wrote at {}", k));
  }
  return 0;
}

TEST_P(TransportConformanceTest, ZeroLengthMessages) {
  std::string report = conformance::runRanks(options(2), zeroLengthBody);
  EXPECT_TRUE(report.empty()) << report;
}

// One 256 MiB message with a verifiable pattern, checked byte for byte.
int largeBody(RankContext& c) {
  constexpr size_t kLen = size_t{256} << 20;
  Buffer buf(c.transport, kLen);
  if (c.rank == 0) fillPattern(buf.at(0), kLen, 42);
  auto r = c.rank == 0 ? c.transport.postSend(1, 0x77, buf.mr, 0, kLen)
                       : c.transport.postRecv(0, 0x77, buf.mr, 0, kLen);
  RANK_CHECK(c, r.isOk(), r.status().toString());
  Status s = c.transport.wait(*r, c.deadline);
  RANK_CHECK(c, s.isOk(), s.toString());
  if (c.rank == 1) {
    std::string bad = checkData(buf.at(0), kLen, 42);
    RANK_CHECK(c, bad.empty(), bad);
  }
  return 0;
}

TEST_P(TransportConformanceTest, VeryLargeMessageArrivesExactly) {
  std::string report = conformance::runRanks(options(2), largeBody);
  EXPECT_TRUE(report.empty()) << report;
}

// Four ranks, every pair exchanging messages of mixed sizes at the same time.
int allToAllBody(RankContext& c) {
  const size_t sizes[] = {0, 13, 4096, 70000, 1 << 20};
  constexpr int kPerPair = 10;
  constexpr size_t kSlot = (1 << 20) + 64;
  auto seed = [](int src, int dst, int i) {
    return uint64_t{10000} * src + uint64_t{100} * dst + i;
  };
  auto tag = [](int src, int dst, int i) {
    return static_cast<uint32_t>(src << 16 | dst << 8 | i);
  };
  Buffer out(c.transport, kSlot * kPerPair * c.size), in(c.transport, kSlot * kPerPair * c.size);
  std::vector<Request> reqs;
  for (int pass = 0; pass < 2; ++pass) {
    for (int p = 0; p < c.size; ++p) {
      for (int i = 0; p != c.rank && i < kPerPair; ++i) {
        size_t off = (p * kPerPair + i) * kSlot, len = sizes[(p + c.rank + i) % 5];
        if (pass == 1) fillPattern(out.at(off), len, seed(c.rank, p, i));
        auto r = pass == 0 ? c.transport.postRecv(p, tag(p, c.rank, i), in.mr, off, len)
                           : c.transport.postSend(p, tag(c.rank, p, i), out.mr, off, len);
        RANK_CHECK(c, r.isOk(), r.status().toString());
        reqs.push_back(*r);
      }
    }
  }
  Status s = waitAll(c.transport, reqs, c.deadline);
  RANK_CHECK(c, s.isOk(), s.toString());
  for (int p = 0; p < c.size; ++p) {
    for (int i = 0; p != c.rank && i < kPerPair; ++i) {
      size_t off = (p * kPerPair + i) * kSlot, len = sizes[(p + c.rank + i) % 5];
      std::string bad = checkData(in.at(off), len, seed(p, c.rank, i));
      RANK_CHECK(c, bad.empty(), fmt::format("message {} from rank {}: {}", i, p, bad));
    }
  }
  return 0;
}

TEST_P(TransportConformanceTest, AllToAllAmongFourRanks) {
  std::string report = conformance::runRanks(options(4), allToAllBody);
  EXPECT_TRUE(report.empty()) << report;
}

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
      conformance::fillPattern(buf.at(off), kSizes[i], 100 + i);
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
  RankRunOptions o = options(3);
  o.final_barrier = false;
  std::string report = conformance::runRanks(o, exitAfterSendBody);
  EXPECT_TRUE(report.empty()) << report;
}

INSTANTIATE_TEST_SUITE_P(Transports, TransportConformanceTest,
                         ::testing::Values(TransportCase{"tcp", 1}, TransportCase{"tcp", 3},
                                           TransportCase{"shm", 1}),
                         [](const ::testing::TestParamInfo<TransportCase>& info) {
                           std::string n = info.param.name;
                           return info.param.streams > 1
                                      ? fmt::format("{}_{}streams", n, info.param.streams)
                                      : n;
                         });

}  // namespace
}  // namespace ccscope::transports
