#include "reports/report_set.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "reports/jsonl_writer.h"
#include "tests/reports/report_test_util.h"

namespace ccscope::reports {
namespace {

std::string dir() {
  std::string d = ::testing::TempDir() + "/report_set_test";
  std::filesystem::create_directories(d);
  return d;
}

void writeJsonl(const std::string& path, const RunRecords& run) {
  std::ofstream out(path);
  out << toJson(*run.meta).dump() << "\n";
  for (const auto& m : run.rows) out << toJson(m).dump() << "\n";
}

TEST(ReportSetTest, WritesEveryRequestedFormatAndPasses) {
  ReportOptions o;
  o.html_path = dir() + "/r.html";
  o.md_path = dir() + "/r.md";
  o.csv_path = dir() + "/r.csv";
  o.junit_path = dir() + "/r.xml";
  o.baseline_path = dir() + "/base.jsonl";
  RunRecords run = testing::sweep("a");
  writeJsonl(o.baseline_path, run);
  auto v = writeReports({run}, o);
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(v->exit_code, 0);
  EXPECT_EQ(v->rows, run.rows.size());
  for (const auto& p : {o.html_path, o.md_path, o.csv_path, o.junit_path})
    EXPECT_GT(std::filesystem::file_size(p), 200u) << p;
}

TEST(ReportSetTest, VerdictCountsEachKindOfFailure) {
  RunRecords base = testing::sweep("a"), now = base;
  now.rows[0].wrong = 1;
  testing::slowDown(now.rows[5], 4);
  ReportOptions o;
  o.baseline_path = dir() + "/base2.jsonl";
  writeJsonl(o.baseline_path, base);
  ASSERT_TRUE(parseCriteria("10%", "8=1000", "", o.criteria).isOk());
  auto v = writeReports({now}, o);
  ASSERT_TRUE(v.isOk());
  EXPECT_EQ(v->exit_code, 1);
  EXPECT_EQ(v->wrong_rows, 1u);
  EXPECT_EQ(v->regressed_rows, 1u);
  EXPECT_EQ(v->limit_rows, 2u);  // both placements of 8 B
  EXPECT_EQ(v->failures.size(), 4u);
}

TEST(ReportSetTest, BadInputsAreErrorsNotVerdicts) {
  RunRecords run = testing::sweep("a");
  ReportOptions o;
  o.baseline_path = dir() + "/missing.jsonl";
  EXPECT_FALSE(writeReports({run}, o).isOk());
  o.baseline_path.clear();
  o.html_path = "/nonexistent-dir/r.html";
  auto v = writeReports({run}, o);
  ASSERT_FALSE(v.isOk());
  EXPECT_NE(v.status().message().find("/nonexistent-dir/r.html"), std::string::npos);
  Criteria c;
  EXPECT_FALSE(parseCriteria("ten", "", "", c).isOk());
  EXPECT_FALSE(parseCriteria("10%", "1M", "", c).isOk());
}

TEST(ReportSetTest, CollectorGathersWhatTheBenchEmits) {
  RecordCollector c("live");
  ResultSink& sink = c;
  RunRecords run = testing::sweep("x");
  sink.onRun(*run.meta);
  for (const auto& m : run.rows) sink.onMeasurement(m);
  ASSERT_EQ(c.runs().size(), 1u);
  EXPECT_EQ(c.runs()[0].label, "live");
  EXPECT_EQ(c.runs()[0].rows.size(), run.rows.size());
}

}  // namespace
}  // namespace ccscope::reports
