#include "reports/markdown_writer.h"

#include <gtest/gtest.h>

#include <sstream>

#include "tests/reports/report_test_util.h"

namespace ccscope::reports {
namespace {

std::string renderMarkdown(const ReportModel& model) {
  std::ostringstream out;
  writeMarkdown(model, out);
  return out.str();
}

TEST(MarkdownWriterTest, PassingRunStartsWithTheVerdictAndKeyNumbers) {
  RunRecords run = testing::sweep("a");
  const std::string md = renderMarkdown(buildReportModel({run}, {run}, true, Criteria{}));
  EXPECT_EQ(md.rfind("## ✅ ccscope report: passed", 0), 0u) << md;
  EXPECT_NE(md.find("### Key numbers"), std::string::npos);
  EXPECT_NE(md.find("| allreduce | shm · ring | 9 |"), std::string::npos) << md;
  EXPECT_NE(md.find("18 rows compared, 0 regressed"), std::string::npos) << md;
  EXPECT_EQ(md.find("### Regressions"), std::string::npos);
}

TEST(MarkdownWriterTest, FailuresListedByKindWithNumbers) {
  RunRecords base = testing::sweep("a");
  RunRecords now = base;
  testing::slowDown(now.rows[8], 2);
  now.rows[1].wrong = 9;
  const std::string md = renderMarkdown(buildReportModel({now}, {base}, true, Criteria{}));
  EXPECT_EQ(md.rfind("## ❌ ccscope report: FAILED: 1 regressed row, 1 row with wrong results", 0),
            0u)
      << md;
  EXPECT_NE(md.find("### Regressions (1)"), std::string::npos);
  EXPECT_NE(md.find("| a | " + rowName(now.rows[8]) + " | busbw GB/s |"), std::string::npos) << md;
  EXPECT_NE(md.find("50.0% worse"), std::string::npos);
  EXPECT_NE(md.find("### Wrong results (1)"), std::string::npos);
  EXPECT_NE(md.find("9 wrong elements"), std::string::npos);
}

TEST(MarkdownWriterTest, PipesInTextDoNotBreakTables) {
  RunRecords run = testing::sweep("a|b");
  const std::string md = renderMarkdown(buildReportModel({run}, {}, false, Criteria{}));
  EXPECT_NE(md.find("| a\\|b |"), std::string::npos) << md;
}

}  // namespace
}  // namespace ccscope::reports
