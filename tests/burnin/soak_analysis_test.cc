#include "burnin/soak_analysis.h"

#include <gtest/gtest.h>

#include <random>

namespace ccscope::burnin {
namespace {

// `links` ring links sampled `n` times 2 s apart at level 1 (+-noise); `edit` changes values.
template <class Edit>
std::vector<SoakSeries> soak(int links, int n, const std::string& metric, Edit edit,
                             uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(0.7, 1.3);
  std::vector<SoakSeries> out;
  for (int l = 0; l < links; ++l) {
    SoakSeries s{"link", "h" + std::to_string(l), "h" + std::to_string((l + 1) % links), metric, {},
                 {}};
    for (int i = 0; i < n; ++i) {
      s.sample.push_back(i);
      s.points.push_back({2.0 * i, edit(l, i, jitter(rng))});
    }
    out.push_back(s);
  }
  return out;
}

std::vector<SoakJudgement> notPassed(const std::vector<SoakJudgement>& all) {
  std::vector<SoakJudgement> out;
  for (const SoakJudgement& j : all)
    if (j.verdict != "pass") out.push_back(j);
  return out;
}

TEST(SoakAnalysisTest, OneLinkThrottledMidwayIsThatLinkFromThen) {
  auto series = soak(6, 30, "bandwidth",
                     [](int l, int i, double v) { return l == 1 && i >= 10 ? v / 500 : v; });
  const auto bad = notPassed(judgeSoak(series, {}));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].kind, "link");
  EXPECT_EQ(bad[0].unit_a, "h1");
  EXPECT_EQ(bad[0].verdict, "failed");
  EXPECT_NEAR(bad[0].since_s, 20, 2.01);
}

TEST(SoakAnalysisTest, EveryLinkMovingAtOnceIsTheFabricNotEachLink) {
  // The whole lab's p99 10x from sample 20 (a busy machine): one fabric finding.
  auto series =
      soak(6, 30, "p99", [](int, int i, double v) { return i >= 20 ? v / 10 / 1e2 : v / 1e2; });
  const auto bad = notPassed(judgeSoak(series, {}));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].kind, "fabric");
  EXPECT_NEAR(bad[0].since_s, 40, 2.01);
}

TEST(SoakAnalysisTest, ALinkSlowMostOfTheSoakIsNamedFromItsFirstSlowSample) {
  // Too few samples for a change point (6 needed): the level still names it, from sample 2.
  auto series = soak(6, 5, "bandwidth",
                     [](int l, int i, double v) { return l == 2 && i >= 2 ? v / 100 : v; });
  const auto bad = notPassed(judgeSoak(series, {}));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].unit_a, "h2");
  EXPECT_FALSE(bad[0].change.found);
  EXPECT_DOUBLE_EQ(bad[0].since_s, 4);
}

TEST(SoakAnalysisTest, ALinkSlowAllAlongIsNamedFromTheStart) {
  auto series = soak(6, 20, "bandwidth", [](int l, int, double v) { return l == 4 ? v / 5 : v; });
  const auto bad = notPassed(judgeSoak(series, {}));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].unit_a, "h4");
  EXPECT_EQ(bad[0].verdict, "failed");  // 0.2 < 0.3
  EXPECT_DOUBLE_EQ(bad[0].since_s, 0);
}

TEST(SoakAnalysisTest, HealthySoaksWithHiccupsFlagNothing) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    // One sample in seven at a tenth on some link (a descheduled rank).
    auto series = soak(
        6, 30, seed % 2 ? "bandwidth" : "p99",
        [](int l, int i, double v) { return (i + l) % 7 == 0 ? v / 10 : v; }, seed);
    EXPECT_TRUE(notPassed(judgeSoak(series, {})).empty()) << "seed " << seed;
  }
}

TEST(SoakAnalysisTest, FewLinksAndCollectivesAreJudgedOnTheirOwn) {
  auto series = soak(2, 30, "bandwidth",
                     [](int l, int i, double v) { return l == 0 && i >= 15 ? v / 2 : v; });
  SoakSeries coll{"collective", "allreduce", "", "busbw", {}, {}};
  for (int i = 0; i < 30; ++i) {
    coll.sample.push_back(i);
    coll.points.push_back({2.0 * i, i >= 15 ? 1.0 : 4.0});
  }
  series.push_back(coll);
  const auto all = judgeSoak(series, {});
  EXPECT_EQ(all.size(), 3u);  // no fabric series below 4 links
  const auto bad = notPassed(all);
  ASSERT_EQ(bad.size(), 2u);
  for (const SoakJudgement& j : bad) EXPECT_NEAR(j.since_s, 30, 2.01) << j.unit_a;
}

}  // namespace
}  // namespace ccscope::burnin
