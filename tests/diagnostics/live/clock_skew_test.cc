#include "diagnostics/live/clock_skew.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/transports/rank_runner.h"

namespace ccscope::diagnostics {
namespace {

using core::Layer;

constexpr int64_t kSec = 1'000'000'000;

// A peer whose clock is `offset` ahead; the ping takes `fwd` ns, the answer `back` ns.
ClockSample sample(int64_t t0, int64_t offset, int64_t fwd, int64_t back) {
  return {t0, t0 + fwd + offset, t0 + fwd + back};
}

TEST(ClockOffsetTest, SymmetricDelaysGiveTheExactOffset) {
  for (int64_t skew : {int64_t{0}, 5 * kSec, -3 * kSec, int64_t{-1234}}) {
    ClockSample s[] = {sample(100 * kSec, skew, 40'000, 40'000)};
    ClockOffset o = estimateClockOffset(s);
    ASSERT_TRUE(o.valid);
    EXPECT_EQ(o.offset_ns, skew);
    EXPECT_EQ(o.rtt_ns, 80'000);
    EXPECT_EQ(o.uncertainty_ns, 40'000);
  }
}

TEST(ClockOffsetTest, AsymmetricDelaysStayWithinTheUncertainty) {
  for (int64_t skew : {2 * kSec, -2 * kSec}) {
    // All of the delay one way, then all of it the other way: the estimate is off by rtt/2.
    for (auto [fwd, back] :
         {std::pair<int64_t, int64_t>{1'000'000, 0}, {0, 1'000'000}, {900'000, 100'000}}) {
      ClockSample s[] = {sample(7 * kSec, skew, fwd, back)};
      ClockOffset o = estimateClockOffset(s);
      ASSERT_TRUE(o.valid);
      EXPECT_LE(std::llabs(o.offset_ns - skew), o.uncertainty_ns) << fwd << "/" << back;
      EXPECT_NE(o.offset_ns, skew + 1'000'000);  // not the naive t_remote - t_send
    }
  }
}

TEST(ClockOffsetTest, TheSmallestRoundTripWins) {
  const int64_t skew = -750'000'000;
  // Slow, lopsided exchanges would pull the estimate far off; the one quick exchange is right.
  std::vector<ClockSample> s = {
      sample(1 * kSec, skew, 30'000'000, 1'000'000), sample(2 * kSec, skew, 2'000'000, 9'000'000),
      sample(3 * kSec, skew, 10'000, 12'000), sample(4 * kSec, skew, 50'000'000, 0)};
  ClockOffset o = estimateClockOffset(s);
  ASSERT_TRUE(o.valid);
  EXPECT_EQ(o.rtt_ns, 22'000);
  EXPECT_EQ(o.uncertainty_ns, 11'000);
  EXPECT_EQ(o.offset_ns, skew - 1'000);  // (10000 - 12000) / 2 off, inside the uncertainty
}

TEST(ClockOffsetTest, NoSamplesOrASteppedClockGiveNoEstimate) {
  EXPECT_FALSE(estimateClockOffset({}).valid);
  ClockSample stepped[] = {{5 * kSec, 5 * kSec, 4 * kSec}};  // received before it was sent
  EXPECT_FALSE(estimateClockOffset(stepped).valid);
  ClockSample mixed[] = {{5 * kSec, 5 * kSec, 4 * kSec}, sample(9 * kSec, kSec, 100, 100)};
  EXPECT_EQ(estimateClockOffset(mixed).offset_ns, kSec);
}

PeerClock peer(int rank, int64_t offset, int64_t unc = 20'000) {
  return {rank, true, "", {true, offset, unc, 2 * unc}};
}

const std::vector<std::string> kHosts = {"h0", "h0", "h1", "h1", "h2", "h2"};

TEST(ClockSkewJudgeTest, PassReportsTheLargestOffsetAndTheBound) {
  auto r = judgeClockSkew({peer(1, 3'000), peer(2, -40'000'000), peer(3, 1'000'000)}, kHosts, 2);
  EXPECT_EQ(r.outcome, ProbeOutcome::kPass);
  EXPECT_EQ(r.layer, Layer::kBootstrap);
  EXPECT_NE(r.detail.find("-0.040 s"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("rank 2 (h1)"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("bound 2 s"), std::string::npos) << r.detail;
  EXPECT_TRUE(r.culprit.empty());
}

TEST(ClockSkewJudgeTest, SkewBeyondTheBoundFailsNamingTheRankAndHost) {
  for (int64_t skew : {5 * kSec, -5 * kSec}) {
    auto r =
        judgeClockSkew({peer(1, 0), peer(2, 1'000), peer(4, skew), peer(5, skew + 300)}, kHosts, 2);
    EXPECT_EQ(r.outcome, ProbeOutcome::kFail);
    EXPECT_EQ(r.layer, Layer::kBootstrap);
    EXPECT_EQ(r.culprit.ranks, (std::vector<int>{4, 5}));
    EXPECT_EQ(r.culprit.hosts, (std::vector<std::string>{"h2", "h2"}));
    EXPECT_NE(r.detail.find(skew > 0 ? "5.000 s ahead of" : "5.000 s behind"), std::string::npos)
        << r.detail;
    // The worst of the two is named: +5 s + 300 ns, or -5 s (rank 5, at -5 s + 300 ns, is less
    // off).
    EXPECT_NE(r.detail.find(skew > 0 ? "rank 5 (h2)" : "rank 4 (h2)"), std::string::npos)
        << r.detail;
    EXPECT_NE(r.detail.find("2 s allowed"), std::string::npos) << r.detail;
    EXPECT_EQ(r.evidence.size(), 2u);
  }
}

TEST(ClockSkewJudgeTest, TheUncertaintyIsGivenToTheClock) {
  // 2.3 s measured over a 1 s round trip: it could be 1.8 s, within the 2 s bound.
  auto r = judgeClockSkew({peer(2, 2'300'000'000, 500'000'000)}, kHosts, 2);
  EXPECT_EQ(r.outcome, ProbeOutcome::kPass) << r.detail;
  r = judgeClockSkew({peer(2, 2'300'000'000, 200'000'000)}, kHosts, 2);
  EXPECT_EQ(r.outcome, ProbeOutcome::kFail) << r.detail;
  r = judgeClockSkew({peer(2, 2'300'000'000, 200'000'000)}, kHosts, 3);
  EXPECT_EQ(r.outcome, ProbeOutcome::kPass) << "--max-clock-skew 3s allows it";
}

TEST(ClockSkewJudgeTest, WhenEveryOtherHostAgreesRankZerosHostIsTheCulprit) {
  auto r = judgeClockSkew(
      {peer(1, 0), peer(2, -9 * kSec), peer(3, -9 * kSec), peer(4, -9 * kSec), peer(5, -9 * kSec)},
      kHosts, 2);
  EXPECT_EQ(r.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(r.culprit.ranks, std::vector<int>{0});
  EXPECT_EQ(r.culprit.hosts, std::vector<std::string>{"h0"});
}

TEST(ClockSkewJudgeTest, APeerThatDoesNotAnswerIsNamed) {
  PeerClock silent{4, false, "rank 0 waited 5.0 s on recv r4->r0 tcp", {}};
  auto r = judgeClockSkew({peer(1, 0), peer(2, 0), silent}, kHosts, 2);
  EXPECT_EQ(r.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(r.layer, Layer::kHostNetwork);
  EXPECT_EQ(r.culprit.ranks, std::vector<int>{4});
  EXPECT_EQ(r.culprit.links, std::vector<std::string>{"h0 <-> h2"});
  ASSERT_EQ(r.evidence.size(), 1u);
  EXPECT_NE(r.evidence[0].find("rank 4 (h2) did not answer"), std::string::npos) << r.evidence[0];
}

TEST(ClockSkewJudgeTest, OneRankHasNothingToCompare) {
  EXPECT_EQ(judgeClockSkew({}, {"h0"}, 2).outcome, ProbeOutcome::kSkip);
}

// Real processes over tcp: rank 0 measures, the others answer; rank `shifted` lies about its
// clock by +4 s (the test-only switch), rank `silent` never answers.
int exchangeBody(transports::conformance::RankContext& c, int shifted, int silent) {
  ProbeOptions o;
  o.timeout_s = 1;
  o.testonly_clock_offset_rank = shifted;
  o.testonly_clock_offset_s = 4;
  if (c.rank == silent) return 0;
  if (c.rank != 0) {
    core::Status s = answerClockSkew(c.transport, o, 10);
    RANK_CHECK(c, s.isOk(), s.toString());
    return 0;
  }
  std::vector<int> peers;
  for (int p = 1; p < c.size; ++p) peers.push_back(p);
  int64_t t0 = core::nowNs();
  auto got = measureClockSkew(c.transport, peers, o);
  RANK_CHECK(c, (core::nowNs() - t0) / 1e9 < 5, "the exchange overran its deadlines");
  RANK_CHECK(c, got.size() == peers.size(), "one result per peer");
  for (const PeerClock& p : got) {
    if (p.rank == silent) {
      RANK_CHECK(c, !p.answered && !p.error.empty(), "a silent peer is reported as such");
      continue;
    }
    RANK_CHECK(c, p.answered && p.offset.valid, fmt::format("rank {}: {}", p.rank, p.error));
    int64_t want = p.rank == shifted ? 4 * kSec : 0;
    RANK_CHECK(
        c, std::llabs(p.offset.offset_ns - want) < kSec / 10,
        fmt::format("rank {}: offset {} ns, expected about {}", p.rank, p.offset.offset_ns, want));
    RANK_CHECK(c, p.offset.uncertainty_ns < kSec / 10, "a loopback round trip is short");
  }
  return 0;
}

transports::conformance::RankRunOptions tcpRanks(int np) {
  return transports::conformance::localRanks("tcp", np, 30);
}

TEST(ClockSkewExchangeTest, SameHostClocksAgreeAndAShiftedClockIsMeasured) {
  std::string report = transports::conformance::runRanks(
      tcpRanks(3), [](transports::conformance::RankContext& c) { return exchangeBody(c, 2, -1); });
  EXPECT_TRUE(report.empty()) << report;
}

TEST(ClockSkewExchangeTest, ASilentPeerEndsInItsDeadlineNotAHang) {
  std::string report = transports::conformance::runRanks(
      tcpRanks(3), [](transports::conformance::RankContext& c) { return exchangeBody(c, -1, 1); });
  EXPECT_TRUE(report.empty()) << report;
}

}  // namespace
}  // namespace ccscope::diagnostics
