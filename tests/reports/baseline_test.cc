#include "reports/baseline.h"

#include <gtest/gtest.h>

#include "reports/report_model.h"
#include "tests/reports/report_test_util.h"

namespace ccscope::reports {
namespace {

using testing::row;
using testing::slowDown;
using testing::sweep;

TEST(BaselineTest, SameRunComparedWithItselfPasses) {
  RunRecords run = sweep("a", {"ring", "tree"});
  ReportModel model = buildReportModel({run}, {run}, true, Criteria{});
  EXPECT_TRUE(model.passed());
  EXPECT_EQ(model.unmatched_rows, 0u);
  for (const ReportRow& r : model.rows) ASSERT_TRUE(r.baseline.has_value());
}

TEST(BaselineTest, SlowedRowsFailAndOnlyThose) {
  RunRecords base = sweep("base");
  RunRecords now = sweep("now");
  slowDown(now.rows[3], 1.5);
  slowDown(now.rows[10], 3);
  ReportModel model = buildReportModel({now}, {base}, true, Criteria{});
  std::vector<size_t> failed;
  for (size_t i = 0; i < model.rows.size(); ++i)
    if (model.rows[i].has(FailureKind::kRegression)) failed.push_back(i);
  EXPECT_EQ(failed, (std::vector<size_t>{3, 10}));
  EXPECT_FALSE(model.passed());
  const auto& d = model.rows[10].baseline->deltas;
  EXPECT_TRUE(d[0].regressed && d[1].regressed && d[2].regressed);
  EXPECT_NEAR(d[0].change, 2.0 / 3, 1e-9);  // busbw down to a third
}

TEST(BaselineTest, SlowdownWithinToleranceIsNotARegression) {
  Measurement base = row(1 << 20), now = base;
  slowDown(now, 1.08);
  EXPECT_FALSE(compareToBaseline(now, base, 0.10).regressed());
  EXPECT_TRUE(compareToBaseline(now, base, 0.05).regressed());
}

TEST(BaselineTest, SlowdownWithinTheRunsOwnNoiseIsNotARegression) {
  Measurement base = row(8), now = base;  // 20 us rows
  slowDown(now, 1.5);                     // 10 us slower: 50%, far beyond 10%
  now.lat.stdev = 14;                     // but iterations scatter by 14 us
  EXPECT_FALSE(compareToBaseline(now, base, 0.10).regressed());
  now.lat.stdev = 2;
  base.lat.stdev = 14;  // the noise of either run counts
  EXPECT_FALSE(compareToBaseline(now, base, 0.10).regressed());
  base.lat.stdev = 2;
  EXPECT_TRUE(compareToBaseline(now, base, 0.10).regressed());
}

TEST(BaselineTest, TailRegressionAloneIsCaughtBeyondTheBaselineTail) {
  Measurement base = row(4096), now = base;
  now.lat.p99 = base.lat.p99 * 3;
  BaselineComparison c = compareToBaseline(now, base, 0.10);
  EXPECT_FALSE(c.deltas[0].regressed);
  EXPECT_FALSE(c.deltas[1].regressed);
  EXPECT_TRUE(c.deltas[2].regressed);
  EXPECT_NE(c.describe().find("p99"), std::string::npos);
  now.lat.p99 = base.lat.p99 + (base.lat.p99 - base.lat.p50) * 0.9;  // inside the baseline's tail
  EXPECT_FALSE(compareToBaseline(now, base, 0.0).deltas[2].regressed);
}

TEST(BaselineTest, FasterIsNeverARegressionAndZeroBusbwIsNotCompared) {
  Measurement base = row(65536), now = base;
  slowDown(now, 0.5);
  EXPECT_FALSE(compareToBaseline(now, base, 0.0).regressed());
  base.busbw_gbps = 0;
  EXPECT_FALSE(compareToBaseline(now, base, 0.0).deltas[0].compared);
}

TEST(BaselineTest, RowsMatchOnEverythingButTheMeasuredValues) {
  RunRecords base = sweep("b", {"ring"});
  RunRecords now = sweep("n", {"ring", "tree"});
  ReportModel model = buildReportModel({now}, {base}, true, Criteria{});
  EXPECT_EQ(model.unmatched_rows, base.rows.size());  // every tree row
  EXPECT_TRUE(model.passed());
  Measurement a = row(8), b = row(8);
  b.in_place = true;
  EXPECT_NE(rowKey(a), rowKey(b));
  b = row(8, false, "ring", 99);
  EXPECT_EQ(rowKey(a), rowKey(b));
}

// `--algo ring,auto`: auto's rows carry its pick in `algorithm` (ring here) and "auto" as the
// algorithm asked for. They are their own rows and series, never merged with ring's.
TEST(BaselineTest, AutoRowsDoNotMergeWithThePickedAlgorithmsRows) {
  RunRecords run = sweep("r", {"ring", "auto"});
  for (Measurement& m : run.rows)
    if (m.algorithm == "auto") {
      m.algorithm = "ring";
      m.requested_algorithm = "auto";
      slowDown(m, 0.5);  // twice as fast: a row matched with its twin would show
    }
  EXPECT_NE(rowKey(run.rows.front()), rowKey(run.rows.back()));
  EXPECT_NE(rowName(run.rows.back()).find(" auto "), std::string::npos) << rowName(run.rows.back());
  ReportModel model = buildReportModel({run}, {run}, true, Criteria{});
  EXPECT_EQ(model.unmatched_rows, 0u);
  ASSERT_EQ(model.series.size(), 2u);
  EXPECT_EQ(model.series[1].name, "shm · auto");
  for (const ReportRow& r : model.rows) {
    ASSERT_TRUE(r.baseline.has_value());
    EXPECT_EQ(r.baseline->base.time_us, r.m.time_us);  // each row matched itself, not its twin
  }
}

TEST(BaselineTest, ToleranceParsing) {
  EXPECT_DOUBLE_EQ(*parseTolerance("10%"), 0.10);
  EXPECT_DOUBLE_EQ(*parseTolerance("2.5"), 0.025);
  EXPECT_DOUBLE_EQ(*parseTolerance("0%"), 0.0);
  for (const char* bad : {"", "%", "ten", "-5%", "100%", "5%%"})
    EXPECT_FALSE(parseTolerance(bad).isOk()) << bad;
}

}  // namespace
}  // namespace ccscope::reports
