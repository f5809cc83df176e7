#include <gtest/gtest.h>

#include "reports/diagnosis.h"

namespace ccscope::reports {
namespace {

TEST(DiagnosisModelTest, JsonHasTheDocumentedShapeAndRoundTrips) {
  Diagnosis d;
  d.layer = core::Layer::kRdma;
  d.conclusive = true;
  d.verdict = "retry exceeded";
  d.culprit = {{3, 4}, {"node1"}, {"node1 -> 10.0.0.2"}};
  d.evidence = {{"rank_3.log", 12, "NET/IB : Got completion"}};
  d.next_step = "check the cable";
  Finding f;
  f.id = "rdma.x";
  f.layer = core::Layer::kRdma;
  f.kind = FindingKind::kRoot;
  f.score = 90;
  f.count = 8;
  d.findings.push_back(f);
  const auto j = toJson(d);
  for (const char* key : {"layer", "verdict", "culprit", "evidence", "next_step", "findings"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["layer"], "rdma");
  EXPECT_EQ(j["culprit"]["ranks"], nlohmann::json({3, 4}));
  EXPECT_EQ(j["evidence"][0]["line"], 12);
  auto back = diagnosisFromJson(j);
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(back->layer, core::Layer::kRdma);
  EXPECT_EQ(back->culprit.links, d.culprit.links);
  EXPECT_EQ(back->findings.at(0).kind, FindingKind::kRoot);
  EXPECT_EQ(back->evidence.at(0).text, d.evidence.at(0).text);
}

TEST(DiagnosisModelTest, SanitizeReplacesInvalidUtf8AndCapsLength) {
  EXPECT_EQ(sanitizeText("ok\xff!"), "ok\xEF\xBF\xBD!");
  EXPECT_EQ(sanitizeText("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(sanitizeText("a\x01z"), "a?z");
  EXPECT_LE(sanitizeText(std::string(10000, 'a'), 100).size(), 103u);
  Diagnosis d;
  d.verdict = "bad \xC3";
  nlohmann::json parsed;
  ASSERT_NO_THROW(parsed = nlohmann::json::parse(toJsonText(d)));
  EXPECT_EQ(parsed.value("verdict", std::string()), "bad \xEF\xBF\xBD");
}

// One link seen from both ends (a ring hop h2 -> h0, a hang on rank 0 waiting for h2) is one
// culprit link.
TEST(DiagnosisModelTest, ALinkIsNamedAlikeFromEitherEndAndMerges) {
  EXPECT_EQ(linkName("h2", "h0"), "h0 <-> h2");
  EXPECT_EQ(linkName("h0", "h2"), "h0 <-> h2");
  Culprit c;
  c.ranks = {5, 0, 5};
  c.links = {linkName("h2", "h0"), linkName("h0", "h2")};
  c.dedupe();
  EXPECT_EQ(c.ranks, (std::vector<int>{0, 5}));
  EXPECT_EQ(c.links, std::vector<std::string>{"h0 <-> h2"});
}

TEST(DiagnosisModelTest, UnknownLayerIsRejected) {
  EXPECT_FALSE(parseLayer("disk").isOk());
  EXPECT_FALSE(diagnosisFromJson(nlohmann::json::array()).isOk());
}

}  // namespace
}  // namespace ccscope::reports
