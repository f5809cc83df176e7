#include "diagnostics/live/probes.h"

#include <gtest/gtest.h>

#include "tests/transports/rank_runner.h"

namespace ccscope::diagnostics {
namespace {

using core::Layer;

ProbeResult fail(Layer l, const std::string& name, std::vector<int> ranks = {},
                 std::string next = "") {
  ProbeResult r{
      l, name, ProbeOutcome::kFail, name + " failed", {}, {"evidence of " + name}, std::move(next)};
  r.culprit.ranks = std::move(ranks);
  return r;
}

ProbeResult pass(Layer l, const std::string& name) {
  return {l, name, ProbeOutcome::kPass, "fine", {}, {}, {}};
}

TEST(ProbeVerdictTest, EveryLayerPassing) {
  auto d = diagnosisOf(
      {pass(Layer::kBootstrap, "rendezvous"), pass(Layer::kApplication, "allreduce over tcp")});
  EXPECT_EQ(d.layer, Layer::kNone);
  EXPECT_EQ(d.verdict, "every layer passed");
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[1].verdict, "PASS allreduce over tcp: fine");
}

TEST(ProbeVerdictTest, TheLowestFailingLayerWinsWhateverTheRunOrder) {
  // The clock-skew probe runs after tcp connect but belongs to the bootstrap layer.
  auto d = diagnosisOf({fail(Layer::kApplication, "allreduce over tcp", {1}),
                        fail(Layer::kLibrary, "ucx init"),
                        fail(Layer::kBootstrap, "clock skew", {2, 2}, "Synchronise the clocks.")});
  EXPECT_EQ(d.layer, Layer::kBootstrap);
  EXPECT_EQ(d.verdict, "clock skew: clock skew failed");
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{2});
  EXPECT_EQ(d.next_step, "Synchronise the clocks.");
  ASSERT_EQ(d.evidence.size(), 1u);
  EXPECT_EQ(d.evidence[0].text, "evidence of clock skew");
  ASSERT_EQ(d.findings.size(), 3u);
  EXPECT_EQ(d.findings[1].evidence.size(), 1u) << "every probe's evidence stays in --json";
}

TEST(ProbeVerdictTest, WithinALayerTheFirstProbeRunWinsAndTheLayerGivesTheNextStep) {
  auto d = diagnosisOf({fail(Layer::kHostNetwork, "pairs", {1, 2}),
                        fail(Layer::kHostNetwork, "ring hops over tcp")});
  EXPECT_EQ(d.verdict, "pairs: pairs failed");
  EXPECT_NE(d.next_step.find("links, routes, firewall"), std::string::npos) << d.next_step;
}

using nlohmann::json;

json pairRecord(int peer, double fwd, double back, double burst_bytes = 4 << 20) {
  return {{"peer", peer},    {"ok", true},        {"rtt_us", 30.0},
          {"fwd_gbps", fwd}, {"back_gbps", back}, {"burst_bytes", burst_bytes}};
}

const std::vector<std::string> kThreeHosts = {"h0", "h1", "h2"};

TEST(HostsTest, OneHostOnlyWhenEveryRankIsOnTheSameKnownHost) {
  EXPECT_TRUE(allOnOneHost({"a", "a", "a"}));
  EXPECT_FALSE(allOnOneHost({"a", "b", "a"}));
  // Hosts not known are not taken for one host: shm might not reach, and links are judged.
  EXPECT_FALSE(allOnOneHost({"?", "?"}));
  EXPECT_FALSE(allOnOneHost({"a", "?"}));
}

TEST(PairsJudgeTest, APairUnderATenthOfTheMedianIsSlowWithEachPassShown) {
  std::vector<json> per_rank = {json::array({pairRecord(1, 2.0, 2.2), pairRecord(2, 1.9, 2.1)}),
                                json::array({pairRecord(2, 0.01, 2.0)}), json::array()};
  per_rank[1][0]["passes"] = {{0.005, 2.0}, {0.01, 1.0}};
  ProbeResult r = judgePairs(per_rank, kThreeHosts);
  EXPECT_EQ(r.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(r.culprit.links, std::vector<std::string>{"h1 <-> h2"});
  ASSERT_EQ(r.evidence.size(), 1u);
  EXPECT_EQ(r.evidence[0],
            "rank 1 (h1) <-> rank 2 (h2): slow: 0.010/2.000 GB/s each way at best in 2 passes "
            "(0.005/2.000, 0.010/1.000 GB/s) vs a median of 2.000");
  per_rank[1] = json::array({pairRecord(2, 1.0, 2.0)});  // half the median: not slow
  EXPECT_EQ(judgePairs(per_rank, kThreeHosts).outcome, ProbeOutcome::kPass);
}

TEST(PairsJudgeTest, PairsThatAllGoThroughOneHostNameThatHost) {
  // Host h2's link throttled: both of its pairs slow, the pair between h0 and h1 fine.
  const std::vector<std::string> hosts = {"h0", "h1", "h2", "h2"};
  std::vector<json> per_rank = {
      json::array({pairRecord(1, 2.0, 2.0), pairRecord(2, 0.001, 0.001), pairRecord(3, 2.1, 1.9)}),
      json::array({pairRecord(2, 2.0, 2.0), pairRecord(3, 0.001, 0.001)}), json::array(),
      json::array()};
  ProbeResult r = judgePairs(per_rank, hosts);
  EXPECT_EQ(r.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(r.culprit.hosts, std::vector<std::string>{"h2"});
  EXPECT_EQ(r.culprit.ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(r.culprit.links, (std::vector<std::string>{"h0 <-> h2", "h1 <-> h2"}));
  // One pair alone names both of its ends.
  per_rank[1][1] = pairRecord(3, 2.0, 2.0);
  r = judgePairs(per_rank, hosts);
  EXPECT_EQ(r.culprit.hosts, (std::vector<std::string>{"h0", "h2"}));
  EXPECT_EQ(r.culprit.ranks, (std::vector<int>{0, 2}));
}

TEST(PairsRecheckTest, OnlySlowPairsThatCouldBeASchedulingDelayAreMeasuredAgain) {
  // 1 <-> 2 at 0.1 GB/s: 4 MiB in 42 ms, which a busy host could cause: measured again.
  std::vector<json> per_rank = {json::array({pairRecord(1, 2.0, 2.2), pairRecord(2, 1.9, 2.1)}),
                                json::array({pairRecord(2, 0.1, 2.0)}), json::array()};
  EXPECT_EQ(pairsToRecheck(per_rank, kThreeHosts), json::parse("[[1, 2]]"));
  // At 0.01 GB/s the same burst took 420 ms: slow for certain, not worth seconds more.
  per_rank[1][0]["fwd_gbps"] = 0.01;
  EXPECT_EQ(pairsToRecheck(per_rank, kThreeHosts), json::array());
  // A healthy set of pairs needs no second pass; nor does one host (speed is not judged there).
  per_rank[1][0]["fwd_gbps"] = 1.5;
  EXPECT_EQ(pairsToRecheck(per_rank, kThreeHosts), json::array());
  per_rank[1][0]["fwd_gbps"] = 0.1;
  EXPECT_EQ(pairsToRecheck(per_rank, {"h0", "h0", "h0"}), json::array());
  // A rank that failed a pair stopped measuring: its pairs are not planned again.
  per_rank[0][0] = {{"peer", 1}, {"ok", false}, {"error", "waited 5 s"}};
  EXPECT_EQ(pairsToRecheck(per_rank, kThreeHosts), json::array());
}

TEST(PairsRecheckTest, TheSecondPassKeepsTheBetterRateOfEachDirection) {
  std::vector<json> per_rank = {json::array({pairRecord(1, 2.0, 2.2), pairRecord(2, 1.9, 2.1)}),
                                json::array({pairRecord(2, 0.1, 2.0)}), json::array()};
  std::vector<json> second = {json::array(), json::array({pairRecord(2, 1.8, 1.0, 16 << 20)}),
                              json::array()};
  second[1][0]["rtt_us"] = 20.0;
  mergeRecheck(per_rank, second);
  const json& r = per_rank[1][0];
  EXPECT_EQ(r["fwd_gbps"], 1.8);
  EXPECT_EQ(r["back_gbps"], 2.0);
  EXPECT_EQ(r["burst_bytes"], 16 << 20);
  EXPECT_EQ(r["rtt_us"], 20.0);
  EXPECT_EQ(r["passes"], json::parse("[[0.1, 2.0], [1.8, 1.0]]"));
  ProbeResult judged = judgePairs(per_rank, kThreeHosts);
  EXPECT_EQ(judged.outcome, ProbeOutcome::kPass);
  EXPECT_EQ(judged.detail,
            "3 pair measurement(s), median 2.000 GB/s; 1 measured again after a slow first pass, "
            "and fine then");
  EXPECT_FALSE(per_rank[0][0].contains("passes")) << "pairs not measured again stay as they were";
  // Failing the second time is the finding.
  second[1][0] = {{"peer", 2}, {"ok", false}, {"error", "waited 5 s"}};
  mergeRecheck(per_rank, second);
  EXPECT_FALSE(per_rank[1][0]["ok"].get<bool>());
  EXPECT_EQ(judgePairs(per_rank, kThreeHosts).outcome, ProbeOutcome::kFail);
}

// Real processes over tcp on one host (so every pair is measured): the lower rank of each pair
// reports it; with a plan, only the planned pairs.
TEST(PairsMeasureTest, EveryPairOrThePlannedOnesAreMeasuredByTheirLowerRank) {
  std::string report = transports::conformance::runRanks(
      transports::conformance::localRanks("tcp", 3, 30),
      [](transports::conformance::RankContext& c) {
        ProbeOptions po;
        po.timeout_s = 5;
        po.burst_bytes = 64 << 10;
        const std::vector<std::string> hosts = {"h0", "h0", "h0"};
        json mine = measurePairs(c.transport, hosts, po);
        RANK_CHECK(c, mine.size() == static_cast<size_t>(c.size - 1 - c.rank), mine.dump());
        for (size_t k = 0; k < mine.size(); ++k) {
          const json& r = mine[k];
          RANK_CHECK(c, r.value("ok", false) && r["peer"] == c.rank + 1 + static_cast<int>(k),
                     r.dump());
          RANK_CHECK(c, r["fwd_gbps"].get<double>() > 0 && r["back_gbps"].get<double>() > 0,
                     r.dump());
          // Bursts grow from 64 KiB by 4x until one takes 2 ms, up to 16 MiB.
          double bytes = r["burst_bytes"].get<double>();
          RANK_CHECK(c, bytes >= 64 << 10 && bytes <= 16 << 20, r.dump());
        }
        json again = measurePairs(c.transport, hosts, po, json::parse("[[0, 2]]"));
        RANK_CHECK(c, again.size() == (c.rank == 0 ? 1u : 0u), again.dump());
        RANK_CHECK(c, c.rank != 0 || (again[0]["peer"] == 2 && again[0].value("ok", false)),
                   again.dump());
        return 0;
      });
  EXPECT_TRUE(report.empty()) << report;
}

}  // namespace
}  // namespace ccscope::diagnostics
