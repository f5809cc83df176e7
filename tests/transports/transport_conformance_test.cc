// The conformance suite every transport passes, its data path: FIFO matching, many outstanding
// requests, zero-length and very large messages, all-to-all traffic. The failure contract is in
// transport_failure_test.cc. Ranks are real processes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/transports/conformance_fixture.h"

namespace ccscope::transports {
namespace {

using conformance::Buffer;
using conformance::checkData;
using conformance::fillPattern;
using conformance::kSentinel;
using conformance::RankContext;
using conformance::TransportCase;
using conformance::TransportConformanceTest;
using conformance::waitAll;
using core::Status;

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

INSTANTIATE_TEST_SUITE_P(
    Transports, TransportConformanceTest,
    ::testing::Values(TransportCase{"tcp", 1}, TransportCase{"tcp", 3}, TransportCase{"shm", 1}
#ifdef CCSCOPE_TEST_UCX
                      ,
                      TransportCase{"ucx", 1, "tcp,self"},
                      TransportCase{"ucx", 1, "posix,sysv,cma,self"},
                      TransportCase{"ucx", 1, "posix,sysv,cma,self", false}
#endif
#ifdef CCSCOPE_TEST_VERBS
                      ,
                      TransportCase{"verbs", 1}
#endif
                      ),
    [](const ::testing::TestParamInfo<TransportCase>& info) {
      std::string n = info.param.name;
      if (info.param.ucx_tls)
        return n + (std::string(info.param.ucx_tls).rfind("tcp", 0) == 0 ? "_tcp" : "_shm") +
               (info.param.ucx_peer_errors ? "" : "_noerr");
      return info.param.streams > 1 ? fmt::format("{}_{}streams", n, info.param.streams) : n;
    });

}  // namespace
}  // namespace ccscope::transports
