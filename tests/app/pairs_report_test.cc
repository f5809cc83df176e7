#include "app/pairs_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ccscope::app {
namespace {

using burnin::Pair;
using burnin::Round;
using nlohmann::json;

// Six hosts, one rank each, every pair once (15 pairs); host h0's p99 is `h0_p99` on all of its
// links, the others' 100 us. Then the retests the book plans: h0's at `retest_p99`, the other
// (control) pairs at `control_p99`.
json judge(double h0_p99, double retest_p99, double control_p99 = 100) {
  PairsOptions o;
  const std::vector<std::string> hosts{"h0", "h1", "h2", "h3", "h4", "h5"};
  std::vector<Round> plan;
  for (int a = 0; a < 6; ++a)
    for (int b = a + 1; b < 6; ++b) plan.push_back({{a, b}});
  PairsBook book;
  book.start(o, hosts, plan);
  auto figures = [](double p99) { return json{{"bw_uni_gbps", 1.0}, {"p99_us", p99}}; };
  int round = 0;
  for (const Round& r : plan)
    for (const Pair& p : r) book.add(round++, false, p, figures(p.first == 0 ? h0_p99 : 100));
  const std::vector<Pair> retests = book.retestPairs(o);
  int controls = 0;
  for (const Pair& p : retests) {
    controls += p.first != 0;
    book.add(round++, true, p, figures(p.first == 0 ? retest_p99 : control_p99));
  }
  EXPECT_TRUE(retests.empty() || controls >= 1) << "a healthy control pair alongside";
  return book.finish(o, nullptr);
}

TEST(PairsReportTest, AHostWhoseRetestsAreHealthyGetsNoVerdict) {
  const json summary = judge(500, 100);
  EXPECT_EQ(summary["hosts"]["h0"], "pass") << summary.dump();
  EXPECT_EQ(pairsVerdictCount(summary), 0);
}

TEST(PairsReportTest, AHostWhoseRetestsAreSlowTooIsDegraded) {
  const json summary = judge(500, 500);
  EXPECT_EQ(summary["hosts"]["h0"], "degraded") << summary.dump();
  EXPECT_EQ(pairsVerdictCount(summary), 1);
}

TEST(PairsReportTest, RetestsAreJudgedAgainstTheControlsMeasuredWithThem) {
  // Retests run a few pairs at a time, faster than the full rounds: h0's 100 us retests are
  // 5x its controls' 20 us, a fault still.
  EXPECT_EQ(judge(500, 100, 20)["hosts"]["h0"], "degraded");
  EXPECT_EQ(judge(500, 25, 20)["hosts"]["h0"], "pass");
}

TEST(PairsReportTest, AHealthyMatrixPlansNoRetestAndPasses) {
  const json summary = judge(100, 100);
  EXPECT_EQ(pairsVerdictCount(summary), 0);
}

}  // namespace
}  // namespace ccscope::app
