#include "diagnostics/live/probes.h"

#include <gtest/gtest.h>

namespace ccscope::diagnostics {
namespace {

using core::Layer;

ProbeResult fail(Layer l, const std::string& name, std::vector<int> ranks = {},
                 std::string next = "") {
  ProbeResult r{l, name, ProbeOutcome::kFail, name + " failed", {}, {"evidence of " + name}, next};
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

}  // namespace
}  // namespace ccscope::diagnostics
