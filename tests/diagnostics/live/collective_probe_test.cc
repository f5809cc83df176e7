#include "diagnostics/live/collective_probe.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/transports/rank_runner.h"

namespace ccscope::diagnostics {
namespace {

using core::Layer;
using nlohmann::json;

const std::vector<std::string> kOneHost = {"h0", "h0", "h0", "h0"};
const std::vector<std::string> kTwoPerHost = {"h0", "h0", "h1", "h1", "h2", "h2"};

json ok(double seconds = 0.002) {
  return {
      {"ok", true}, {"detail", "1 MiB allreduce completed"}, {"peer", -1}, {"seconds", seconds}};
}
json failed(int waited_for) {
  return {{"ok", false},
          {"detail", fmt::format("waited 5.0 s for rank {}", waited_for)},
          {"peer", waited_for},
          {"seconds", 5.0}};
}

TEST(AllreduceJudgeTest, EveryRankCompletedPassesWithTimeAndBusBandwidth) {
  auto r = judgeAllreduce({ok(0.002), ok(0.004), ok(0.003), ok(0.001)}, "tcp", kOneHost);
  EXPECT_EQ(r.outcome, ProbeOutcome::kPass);
  EXPECT_EQ(r.name, "allreduce over tcp");
  // The slowest rank counts: 2 (n-1)/n x 1 MiB in 4 ms.
  EXPECT_EQ(r.detail,
            "1 MiB allreduce completed on every rank in 4.0 ms (0.393 GB/s bus bandwidth)");
}

TEST(AllreduceJudgeTest, TheRankOthersWaitedForThatFinishedItsSideIsTheCulprit) {
  // Rank 1 skipped the collective: 0 and 2 wait (on 1 directly or through the ring), 3 too.
  auto r = judgeAllreduce({failed(3), ok(0), failed(1), failed(2)}, "tcp", kOneHost);
  EXPECT_EQ(r.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(r.layer, Layer::kApplication);
  EXPECT_EQ(r.culprit.ranks, std::vector<int>{1});
  EXPECT_NE(r.detail.find("rank(s) 1 finished their side while ranks 0, 2, 3 failed waiting"),
            std::string::npos)
      << r.detail;
  EXPECT_EQ(r.evidence.size(), 3u);
}

TEST(AllreduceJudgeTest, WithoutSuchARankTheFailedRanksAreNamed) {
  auto r = judgeAllreduce({failed(3), failed(0), ok(), failed(2)}, "shm", kOneHost);
  // 2 finished and 3 waited for it: rank 2 is the head.
  EXPECT_EQ(r.culprit.ranks, std::vector<int>{2});
  r = judgeAllreduce({failed(1), failed(0), failed(1), failed(2)}, "shm", kOneHost);
  EXPECT_EQ(r.culprit.ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(r.detail, "allreduce failed on ranks 0, 1, 2, 3");
}

TEST(AllreduceJudgeTest, RanksWhoseTransportDidNotConnectMakeItASkip) {
  json skipped = {{"skipped", "the tcp transport did not connect"}};
  auto r = judgeAllreduce({skipped, skipped, skipped, skipped}, "tcp", kOneHost);
  EXPECT_EQ(r.outcome, ProbeOutcome::kSkip);
  EXPECT_EQ(r.detail, "skipped: the tcp transport did not connect (ranks 0, 1, 2, 3)");
}

TEST(BisectionTest, AFailureIsBisectedEvenOnOneHost) {
  EXPECT_EQ(bisectionReason({ok(), failed(0), ok(), ok()}, kOneHost, 3.0), "the allreduce failed");
}

TEST(BisectionTest, SlowIsJudgedOnlyAcrossHostsAndAgainstThePairs) {
  std::vector<json> slow(6, ok(0.1));  // 1.7 MiB per rank in 0.1 s: 0.017 GB/s
  EXPECT_NE(bisectionReason(slow, kTwoPerHost, 1.0)
                .find("under a quarter of the pairs' median 1.000 GB/s"),
            std::string::npos);
  EXPECT_EQ(bisectionReason(slow, kTwoPerHost, 0.05), "")
      << "at a quarter of a slow median it is fine";
  EXPECT_EQ(bisectionReason(slow, {"h0", "h0", "h0", "h0", "h0", "h0"}, 1.0), "") << "one host";
  EXPECT_EQ(bisectionReason(slow, kTwoPerHost, 0), "") << "no pair measured";
}

TEST(BisectionTest, NotWhenARankIsMissingOrCouldNotTakePart) {
  EXPECT_EQ(bisectionReason({failed(1), json(), ok(), ok()}, kOneHost, 1.0), "");
  EXPECT_EQ(bisectionReason({failed(1), json{{"skipped", "x"}}, ok(), ok()}, kOneHost, 1.0), "");
}

// Hop records as measureRingHops writes them: the sender's rate for each hop h -> h+1.
std::vector<json> hopRecords(const std::vector<double>& gbps, int failing_hop = -1) {
  const int n = static_cast<int>(gbps.size());
  std::vector<json> per_rank(n, json::array());
  for (int h = 0; h < n; ++h) {
    bool bad = h == failing_hop;
    json send = {{"hop", h}, {"role", "send"}, {"peer", (h + 1) % n}, {"ok", !bad}};
    json recv = {{"hop", h}, {"role", "recv"}, {"peer", h}, {"ok", !bad}};
    if (bad) {
      send["error"] = "waited 5.0 s for the ack";
      recv["error"] = "waited 5.0 s for the data";
    } else {
      send["gbps"] = gbps[h];
      send["passes"] = {gbps[h] * 0.9, gbps[h]};
    }
    per_rank[h].push_back(send);
    per_rank[(h + 1) % n].push_back(recv);
  }
  return per_rank;
}

TEST(RingHopsJudgeTest, ASlowHopBetweenHostsIsTheLink) {
  // Hop 3 (rank 3 on h1 -> rank 4 on h2) at 0.001 GB/s; the hop inside h0 is slow too, but
  // speed within one host says nothing about the network.
  auto r = judgeRingHops(hopRecords({0.05, 1.2, 1.1, 0.001, 1.3, 1.0}), kTwoPerHost, "tcp",
                         "the allreduce ran slow");
  EXPECT_EQ(r.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(r.layer, Layer::kHostNetwork);
  EXPECT_EQ(r.name, "ring hops over tcp");
  EXPECT_EQ(r.culprit.ranks, (std::vector<int>{3, 4}));
  EXPECT_EQ(r.culprit.links, std::vector<std::string>{"h1 <-> h2"});
  EXPECT_NE(r.detail.find("ring hop rank 3 (h1) -> rank 4 (h2) runs at 0.001 GB/s at best in 2 "
                          "passes (0.001, 0.001 GB/s), under a quarter of the median hop between "
                          "hosts (1.000 GB/s)"),
            std::string::npos)
      << r.detail;
  EXPECT_EQ(r.evidence.back(), "bisected because the allreduce ran slow");
}

TEST(RingHopsJudgeTest, HopsInsideAHostDoNotSetTheBarForTheNetwork) {
  // Two ranks per host: the even hops stay inside a host (loopback, 6 GB/s), the odd ones cross
  // the network at 0.9-1.6 GB/s. Against the median of all hops (6.0) the 0.9 GB/s hop would be
  // under a quarter; against the network hops' median (1.5) it is an ordinary one.
  const std::vector<std::string> hosts = {"h0", "h0", "h1", "h1", "h2", "h2", "h3", "h3"};
  auto r = judgeRingHops(hopRecords({6.0, 1.5, 6.0, 0.9, 6.0, 1.6, 6.0, 1.4}), hosts, "tcp",
                         "the allreduce ran slow");
  EXPECT_EQ(r.outcome, ProbeOutcome::kPass) << r.detail;
  EXPECT_NE(r.detail.find("median 1.500 GB/s"), std::string::npos) << r.detail;
  r = judgeRingHops(hopRecords({6.0, 1.5, 6.0, 0.3, 6.0, 1.6, 6.0, 1.4}), hosts, "tcp",
                    "the allreduce ran slow");
  EXPECT_EQ(r.outcome, ProbeOutcome::kFail) << "0.3 GB/s is under a quarter of 1.5";
  EXPECT_EQ(r.culprit.links, std::vector<std::string>{"h1 <-> h2"});
}

TEST(RingHopsJudgeTest, AFailedHopIsNamedWithTheLayerOfWhereItRuns) {
  auto r =
      judgeRingHops(hopRecords({1, 1, 1, 1, 1, 1}, 5), kTwoPerHost, "tcp", "the allreduce failed");
  EXPECT_EQ(r.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(r.layer, Layer::kHostNetwork);                            // rank 5 (h2) -> rank 0 (h0)
  EXPECT_EQ(r.culprit.links, std::vector<std::string>{"h0 <-> h2"});  // named alike from either end
  EXPECT_NE(r.detail.find("failed: sender: waited 5.0 s for the ack"), std::string::npos)
      << r.detail;
  r = judgeRingHops(hopRecords({1, 1, 1, 1}, 2), kOneHost, "tcp", "the allreduce failed");
  EXPECT_EQ(r.layer, Layer::kLibrary) << "two processes of one host: the transport, not a network";
  EXPECT_EQ(r.culprit.ranks, (std::vector<int>{2, 3}));
  EXPECT_TRUE(r.culprit.links.empty());
}

TEST(RingHopsJudgeTest, EveryHopFineLeavesTheVerdictToTheAllreduce) {
  auto r = judgeRingHops(hopRecords({1.0, 1.2, 0.9, 1.1}), kOneHost, "tcp", "the allreduce failed");
  EXPECT_EQ(r.outcome, ProbeOutcome::kPass);
  EXPECT_NE(
      r.detail.find(
          "the allreduce failed, but every hop delivers: median 1.100 GB/s, slowest 0.900 GB/s "
          "(rank 2 (h0) -> rank 3 (h0))"),
      std::string::npos)
      << r.detail;
  EXPECT_EQ(judgeRingHops({json::array(), json::array()}, {"h0", "h1"}, "tcp", "x").outcome,
            ProbeOutcome::kSkip);
}

// Real processes over tcp: every rank walks the hops; each hop is reported by both ends.
TEST(RingHopsMeasureTest, EveryHopIsTimedByItsSender) {
  for (int np : {2, 3}) {
    std::string report = transports::conformance::runRanks(
        transports::conformance::localRanks("tcp", np, 30),
        [](transports::conformance::RankContext& c) {
          ProbeOptions po;
          po.timeout_s = 5;
          json mine = measureRingHops(c.transport, po, 256 << 10);
          RANK_CHECK(c, mine.size() == 2u, mine.dump());
          for (const json& rec : mine) {
            RANK_CHECK(c, rec.value("ok", false), rec.dump());
            bool send = rec["role"] == "send";
            RANK_CHECK(c, rec["hop"] == (send ? c.rank : (c.rank + c.size - 1) % c.size),
                       rec.dump());
            RANK_CHECK(c, !send || rec.value("gbps", 0.0) > 0, rec.dump());
            // The sender reports each pass's best; the hop's rate is the better one.
            if (send) {
              RANK_CHECK(c, rec["passes"].size() == 2u, rec.dump());
              double best =
                  std::max(rec["passes"][0].get<double>(), rec["passes"][1].get<double>());
              RANK_CHECK(c, rec["gbps"].get<double>() == best, rec.dump());
            } else {
              RANK_CHECK(c, !rec.contains("passes"), rec.dump());
            }
          }
          return 0;
        });
    EXPECT_TRUE(report.empty()) << "np " << np << ": " << report;
  }
}

}  // namespace
}  // namespace ccscope::diagnostics
