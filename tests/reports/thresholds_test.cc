#include "reports/thresholds.h"

#include <gtest/gtest.h>

#include "reports/report_model.h"
#include "tests/reports/report_test_util.h"

namespace ccscope::reports {
namespace {

using testing::row;
using testing::sweep;

TEST(ThresholdsTest, ParsesSizesWithSuffixesAndRejectsJunk) {
  auto t = parseThresholds("1M=5,8=0.5,", LimitKind::kMinBusbw);
  ASSERT_TRUE(t.isOk()) << t.status().toString();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].bytes, 1u << 20);
  EXPECT_DOUBLE_EQ((*t)[0].value, 5);
  EXPECT_EQ((*t)[1].bytes, 8u);
  EXPECT_TRUE(parseThresholds("", LimitKind::kMaxLatency)->empty());
  for (const char* bad : {"1M", "1M=", "=5", "1Q=5", "1M=fast", "1M=-1"})
    EXPECT_FALSE(parseThresholds(bad, LimitKind::kMinBusbw).isOk()) << bad;
}

TEST(ThresholdsTest, LimitsApplyToRowsOfThatSizeOnly) {
  auto min = parseThresholds("64K=1000", LimitKind::kMinBusbw);
  auto max = parseThresholds("8=1", LimitKind::kMaxLatency);
  EXPECT_TRUE(checkThreshold((*min)[0], row(65536)).has_value());
  EXPECT_FALSE(checkThreshold((*min)[0], row(4096)).has_value());
  EXPECT_TRUE(checkThreshold((*max)[0], row(8)).has_value());
  auto lax = parseThresholds("8=1000", LimitKind::kMaxLatency);
  EXPECT_FALSE(checkThreshold((*lax)[0], row(8)).has_value());
}

TEST(ThresholdsTest, ViolationsFailExactlyTheirRows) {
  Criteria c;
  c.limits = *parseThresholds("32K=1000", LimitKind::kMinBusbw);
  ReportModel model = buildReportModel({sweep("a", {"ring", "tree"})}, {}, false, c);
  EXPECT_EQ(model.count(FailureKind::kThreshold), 4u);  // 2 algorithms x 2 placements
  for (const ReportRow& r : model.rows) EXPECT_EQ(r.failed(), r.m.bytes == 32768);
  EXPECT_FALSE(model.passed());
}

TEST(ThresholdsTest, LimitMatchingNoRowFailsTheReport) {
  Criteria c;
  c.limits = *parseThresholds("3M=1", LimitKind::kMinBusbw);
  ReportModel model = buildReportModel({sweep("a")}, {}, false, c);
  EXPECT_EQ(model.failedRows(), 0u);
  ASSERT_EQ(model.unmatched_limits.size(), 1u);
  EXPECT_NE(model.unmatched_limits[0].find("--min-busbw 3M=1"), std::string::npos);
  EXPECT_FALSE(model.passed());
}

TEST(ThresholdsTest, WrongResultsFailTheirRow) {
  RunRecords run = sweep("a");
  run.rows[5].wrong = 7;
  ReportModel model = buildReportModel({run}, {}, false, Criteria{});
  EXPECT_EQ(model.count(FailureKind::kWrongResults), 1u);
  EXPECT_TRUE(model.rows[5].has(FailureKind::kWrongResults));
}

}  // namespace
}  // namespace ccscope::reports
