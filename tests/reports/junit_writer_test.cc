#include "reports/junit_writer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "tests/reports/report_test_util.h"

namespace ccscope::reports {
namespace {

const std::string kXsd = (std::filesystem::path(__FILE__).parent_path() / "junit.xsd").string();

std::string writeTo(const ReportModel& model, const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream out(path);
  writeJunit(model, out);
  return path;
}

std::string shell(const std::string& cmd, int& rc) {
  std::string out;
  std::FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  rc = p ? pclose(p) : -1;
  return out;
}

bool haveXmllint() {
  int rc = 0;
  shell("command -v xmllint >/dev/null 2>&1", rc);
  return rc == 0;
}

// The names of the testcases that have a <failure>, from the XML itself.
std::multiset<std::string> failedCases(const std::string& path) {
  int rc = 0;
  std::string out =
      shell("xmllint --xpath '//testcase[failure]/@name' " + path + " 2>/dev/null", rc);
  std::multiset<std::string> names;
  for (size_t p = 0; (p = out.find("name=\"", p)) != std::string::npos;) {
    p += 6;
    names.insert(out.substr(p, out.find('"', p) - p));
  }
  return names;
}

TEST(JunitWriterTest, ValidatesAgainstTheJunitSchema) {
  if (!haveXmllint()) GTEST_SKIP() << "xmllint not installed (apt-get install libxml2-utils)";
  RunRecords run = testing::sweep("a<&>\"'", {"ring", "tree"});
  run.rows[0].wrong = 5;
  run.rows[1].algorithm = "odd \x01 name";
  Criteria c;
  c.limits = *parseThresholds("3M=1", LimitKind::kMinBusbw);  // matches nothing: own testcase
  ReportModel model = buildReportModel({run}, {run}, true, c);
  const std::string path = writeTo(model, "junit_valid.xml");
  int rc = 0;
  std::string out = shell("xmllint --noout --schema " + kXsd + " " + path + " 2>&1", rc);
  EXPECT_EQ(rc, 0) << out;
}

TEST(JunitWriterTest, ExactlyTheWrongAndRegressedRowsFail) {
  if (!haveXmllint()) GTEST_SKIP() << "xmllint not installed (apt-get install libxml2-utils)";
  RunRecords base = testing::sweep("run");
  RunRecords now = base;
  now.rows[4].wrong = 1;
  testing::slowDown(now.rows[9], 2);
  ReportModel model = buildReportModel({now}, {base}, true, Criteria{});
  const std::string path = writeTo(model, "junit_failures.xml");
  EXPECT_EQ(failedCases(path),
            (std::multiset<std::string>{rowName(now.rows[4]), rowName(now.rows[9])}));
  int rc = 0;
  std::string type =
      shell("xmllint --xpath 'string(//testcase[failure][2]/failure/@type)' " + path, rc);
  EXPECT_EQ(type.substr(0, type.find_last_not_of('\n') + 1), "regression");
  std::string total = shell("xmllint --xpath 'string(/testsuites/@failures)' " + path, rc);
  EXPECT_EQ(total.substr(0, total.find_last_not_of('\n') + 1), "2");
}

TEST(JunitWriterTest, OneTestcasePerRowOneSuitePerSeries) {
  RunRecords run = testing::sweep("r", {"ring", "tree"});
  ReportModel model = buildReportModel({run}, {}, false, Criteria{});
  std::ostringstream out;
  writeJunit(model, out);
  const std::string xml = out.str();
  size_t cases = 0, suites = 0;
  for (size_t p = 0; (p = xml.find("<testcase ", p)) != std::string::npos; ++p) ++cases;
  for (size_t p = 0; (p = xml.find("<testsuite ", p)) != std::string::npos; ++p) ++suites;
  EXPECT_EQ(cases, run.rows.size());
  EXPECT_EQ(suites, 2u);
  EXPECT_NE(xml.find("classname=\"ccscope.r.allreduce.shm.tree\""), std::string::npos);
}

// auto's rows (their `algorithm` is the pick, ring here) are their own suite and class.
TEST(JunitWriterTest, AutoRowsAreTheirOwnSuiteAndClass) {
  RunRecords run = testing::sweep("r", {"ring", "auto"});
  for (Measurement& m : run.rows)
    if (m.algorithm == "auto") m.algorithm = "ring", m.requested_algorithm = "auto";
  ReportModel model = buildReportModel({run}, {}, false, Criteria{});
  std::ostringstream out;
  writeJunit(model, out);
  const std::string xml = out.str();
  size_t suites = 0;
  for (size_t p = 0; (p = xml.find("<testsuite ", p)) != std::string::npos; ++p) ++suites;
  EXPECT_EQ(suites, 2u);
  EXPECT_NE(xml.find("classname=\"ccscope.r.allreduce.shm.auto\""), std::string::npos);
  EXPECT_NE(xml.find("name=\"allreduce auto shm 8B float sum out-of-place\""), std::string::npos)
      << xml.substr(0, 600);
}

}  // namespace
}  // namespace ccscope::reports
