#include "burnin/pair_analysis.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

namespace ccscope::burnin {
namespace {

// Every pair of n units, each figure = 10 x host factors x link factor x noise (+-noise).
std::vector<PairValue> matrix(int n, const std::vector<std::pair<int, double>>& slow_hosts,
                              const std::vector<std::tuple<int, int, double>>& slow_links,
                              double noise, uint64_t seed) {
  std::vector<double> host(n, 1.0);
  for (auto [u, f] : slow_hosts) host[u] = f;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(1 - noise, 1 + noise);
  std::vector<PairValue> out;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      double v = 10 * host[a] * host[b] * jitter(rng);
      for (auto [x, y, f] : slow_links)
        if (x == a && y == b) v *= f;
      out.push_back({a, b, v});
    }
  return out;
}

TEST(PairAnalysisTest, ASlowHostIsOneHostNotItsLinks) {
  MatrixFit fit = analyzeMatrix(6, matrix(6, {{3, 0.4}}, {}, 0.05, 1), Thresholds{});
  ASSERT_EQ(fit.findings.size(), 1u) << fit.findings.size();
  EXPECT_TRUE(fit.findings[0].host);
  EXPECT_EQ(fit.findings[0].a, 3);
  EXPECT_EQ(fit.findings[0].verdict, Verdict::kDegraded);
  EXPECT_NEAR(fit.findings[0].share, 0.4, 0.05);
  EXPECT_NEAR(fit.typical, 10, 1);
}

TEST(PairAnalysisTest, ASlowLinkIsOneLinkNotItsHosts) {
  MatrixFit fit = analyzeMatrix(6, matrix(6, {}, {{1, 4, 0.05}}, 0.05, 2), Thresholds{});
  ASSERT_EQ(fit.findings.size(), 1u);
  EXPECT_FALSE(fit.findings[0].host);
  EXPECT_EQ(fit.findings[0].a, 1);
  EXPECT_EQ(fit.findings[0].b, 4);
  EXPECT_EQ(fit.findings[0].verdict, Verdict::kFailed);
}

TEST(PairAnalysisTest, BothAtOnceAreTold) {
  // The acceptance case: 6 hosts, host 2 slowed on all links, link 0-5 throttled.
  MatrixFit fit = analyzeMatrix(6, matrix(6, {{2, 0.3}}, {{0, 5, 0.02}}, 0.1, 3), Thresholds{});
  ASSERT_EQ(fit.findings.size(), 2u);
  EXPECT_FALSE(fit.findings[0].host);  // worst first: the link at 2%
  EXPECT_EQ(fit.findings[0].a, 0);
  EXPECT_EQ(fit.findings[0].b, 5);
  EXPECT_TRUE(fit.findings[1].host);
  EXPECT_EQ(fit.findings[1].a, 2);
}

TEST(PairAnalysisTest, HealthyNoisyMatricesFlagNothing) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    MatrixFit fit = analyzeMatrix(12, matrix(12, {}, {}, 0.2, seed), Thresholds{});
    EXPECT_TRUE(fit.findings.empty()) << "seed " << seed << ": " << fit.findings.size();
  }
}

TEST(PairAnalysisTest, ARetestsBetterFigureWins) {
  std::vector<PairValue> v = matrix(6, {}, {{1, 2, 0.1}}, 0.02, 4);
  EXPECT_EQ(analyzeMatrix(6, v, Thresholds{}).findings.size(), 1u);
  v.push_back({2, 1, 10});  // the retest found the link healthy: a fluke
  EXPECT_TRUE(analyzeMatrix(6, v, Thresholds{}).findings.empty());
}

TEST(PairAnalysisTest, TooFewUnitsSaySoAndJudgeNothing) {
  MatrixFit fit = analyzeMatrix(3, matrix(3, {{0, 0.1}}, {}, 0, 5), Thresholds{});
  EXPECT_TRUE(fit.findings.empty());
  EXPECT_NE(fit.note.find("at least 4"), std::string::npos) << fit.note;
}

// docs/burnin.md's scale figure: a full 1,024-host matrix (523,776 pairs) in under a second.
TEST(PairAnalysisTest, AThousandHostMatrixTakesUnderASecond) {
  std::vector<PairValue> v = matrix(1024, {{17, 0.3}}, {{100, 900, 0.05}}, 0.1, 6);
  auto t0 = std::chrono::steady_clock::now();
  MatrixFit fit = analyzeMatrix(1024, v, Thresholds{});
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 1.0);
  ASSERT_EQ(fit.findings.size(), 2u);
  EXPECT_EQ(fit.findings[0].a, 100);
  EXPECT_EQ(fit.findings[1].a, 17);
  RecordProperty("seconds", std::to_string(s));
}

}  // namespace
}  // namespace ccscope::burnin
