#include "app/pairs_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ccscope::app {
namespace {

using burnin::Pair;
using burnin::Round;
using nlohmann::json;

// `units` hosts, one rank each, every pair once; host h0's p99 is `h0_p99` on all of its links,
// the others' 100 us. Then the retests the book plans: h0's at `retest_p99`, the other (control)
// pairs at `control_p99`. `planned`: how many retest pairs there were.
json judge(double h0_p99, double retest_p99, double control_p99 = 100, int units = 6,
           size_t* planned = nullptr, const std::string& unjudged = "") {
  PairsOptions o;
  o.latency_unjudged = unjudged;
  std::vector<std::string> hosts;
  hosts.reserve(units);
  for (int u = 0; u < units; ++u) hosts.push_back("h" + std::to_string(u));
  std::vector<Round> plan;
  for (int a = 0; a < units; ++a)
    for (int b = a + 1; b < units; ++b) plan.push_back({{a, b}});
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
  if (planned) *planned = retests.size();
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

TEST(PairsReportTest, FiveUnitsTakeTheSecondControlFromTheRetestPartners) {
  // One suspect and its two partners leave two units, one control pair; the partners make the
  // second.
  size_t planned = 0;
  EXPECT_EQ(judge(500, 100, 20, 5, &planned)["hosts"]["h0"], "degraded");
  EXPECT_EQ(planned, 4u) << "two retests and two controls";
  EXPECT_EQ(judge(500, 25, 20, 5)["hosts"]["h0"], "pass");
}

TEST(PairsReportTest, AHealthyMatrixPlansNoRetestAndPasses) {
  size_t planned = 99;
  const json summary = judge(100, 100, 100, 6, &planned);
  EXPECT_EQ(planned, 0u);
  EXPECT_EQ(pairsVerdictCount(summary), 0);
}

TEST(PairsReportTest, P99GoesUnjudgedWhereRanksOutnumberTheCores) {
  const std::string why = latencyUnjudged(12, 2);
  EXPECT_NE(why.find("12 ranks share the 2 cores"), std::string::npos) << why;
  EXPECT_EQ(latencyUnjudged(2, 2), "");
  EXPECT_EQ(latencyUnjudged(12, 0), "") << "cores unknown: judged";
  // A slow p99 that its retests would confirm is neither retested nor a verdict; the summary
  // says why.
  size_t planned = 99;
  const json summary = judge(500, 500, 100, 6, &planned, why);
  EXPECT_EQ(planned, 0u);
  EXPECT_EQ(summary["hosts"]["h0"], "pass") << summary.dump();
  EXPECT_EQ(pairsVerdictCount(summary), 0);
  EXPECT_EQ(summary["p99_unjudged"], why);
}

}  // namespace
}  // namespace ccscope::app
