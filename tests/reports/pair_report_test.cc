// `ccscope pairs` records in reports: read back from a run recorded on the network-namespace lab
// (6 hosts; host 4 and the link h1 <-> h2 throttled to 10 Mbit/s), the heatmap, the Markdown
// verdicts and one JUnit testcase per host and per link.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "reports/html_writer.h"
#include "reports/jsonl_reader.h"
#include "reports/junit_writer.h"
#include "reports/markdown_writer.h"
#include "reports/report_model.h"

namespace ccscope::reports {
namespace {

const std::string kFaults = std::string(CCSCOPE_TEST_DATA) + "/pairs/netns-6hosts-faults.jsonl";

ReportModel faults() {
  auto runs = readResultsFile(kFaults);
  EXPECT_TRUE(runs.isOk()) << runs.status().toString();
  return buildReportModel(runs.isOk() ? *runs : std::vector<RunRecords>{}, {}, false, Criteria{});
}

size_t countOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = 0; (p = text.find(needle, p)) != std::string::npos; p += needle.size()) ++n;
  return n;
}

TEST(PairReportTest, TheRecordedRunReadsAsAMatrixWithItsVerdicts) {
  ReportModel m = faults();
  ASSERT_EQ(m.runs.size(), 1u);
  ASSERT_TRUE(m.runs[0].pairs);
  const PairMatrix& p = *m.runs[0].pairs;
  EXPECT_EQ(p.units.size(), 6u);
  EXPECT_EQ(p.scope, "hosts");
  ASSERT_EQ(p.verdicts.size(), 2u);
  EXPECT_EQ(p.verdicts[0].kind, "host");
  EXPECT_NE(p.verdicts[0].unit_a.find("h4"), std::string::npos);
  EXPECT_EQ(p.verdicts[1].kind, "link");
  // Every pair of 6 hosts measured; the retests' better figures kept.
  for (size_t a = 0; a < 6; ++a)
    for (size_t b = 0; b < 6; ++b) EXPECT_EQ(std::isnan(p.bw_gbps[a][b]), a == b) << a << b;
  EXPECT_FALSE(m.passed());
  EXPECT_EQ(m.pairVerdicts(), 2u);
}

TEST(PairReportTest, HeatmapIsFilledSlowestHostFirst) {
  std::ostringstream out;
  writeHtml(faults(), out);
  const std::string html = out.str();
  EXPECT_NE(html.find("data-state=\"filled\""), std::string::npos);
  EXPECT_EQ(countOf(html, "<table class=\"matrix\">"), 2u);  // bandwidth and p99
  EXPECT_EQ(countOf(html, "<td style="), 2u * 30);           // 6 x 5 measured cells each
  // The throttled host leads the rows: its median link is the slowest.
  const size_t first_row = html.find("<tr><th>1 ");
  ASSERT_NE(first_row, std::string::npos);
  EXPECT_EQ(html.compare(html.find("</th>", first_row) - 2, 2, "h4"), 0)
      << html.substr(first_row, 60);
  EXPECT_NE(html.find("failed host "), std::string::npos);
}

TEST(PairReportTest, MarkdownAndJunitCarryTheVerdicts) {
  ReportModel m = faults();
  std::ostringstream md, xml;
  writeMarkdown(m, md);
  writeJunit(m, xml);
  EXPECT_NE(md.str().find("- failed host "), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("- failed link "), std::string::npos);
  // 6 hosts + 15 links, two of them failed.
  EXPECT_NE(xml.str().find("tests=\"21\" failures=\"2\""), std::string::npos) << xml.str();
  EXPECT_EQ(countOf(xml.str(), "classname=\"ccscope.pairs.link\""), 15u);
  EXPECT_EQ(countOf(xml.str(), "<failure type=\"failed\""), 2u);
}

// 100 units: each matrix shows the 64 slowest, unit 7 (every link of it at a tenth) first.
TEST(PairReportTest, ALargeMatrixShowsTheSlowestUnits) {
  std::string text = R"({"type":"pairs_run","scope":"hosts","transport":"tcp","units":[)";
  for (int u = 0; u < 100; ++u) text += (u ? ",\"u" : "\"u") + std::to_string(u) + "\"";
  text += "]}\n";
  for (int a = 0; a < 100; ++a)
    for (int b = a + 1; b < 100; ++b)
      text += fmt::format(
          R"({{"type":"pair","unit_a":"u{}","unit_b":"u{}","bw_uni_gbps":{},"p99_us":10}})"
          "\n",
          a, b, a == 7 || b == 7 ? 0.1 : 1.0 + 0.001 * (a + b));
  std::istringstream in(text);
  auto runs = readResults(in, "big.jsonl");
  ASSERT_TRUE(runs.isOk()) << runs.status().toString();
  std::ostringstream out;
  writeHtml(buildReportModel(*runs, {}, false, Criteria{}), out);
  const std::string html = out.str();
  EXPECT_NE(html.find("The 64 slowest of 100 units"), std::string::npos);
  EXPECT_EQ(countOf(html, "<th title="), 2u * 64);
  EXPECT_NE(html.find("<tr><th>1 u7</th>"), std::string::npos);
}

TEST(PairReportTest, APairBeforeItsRunRecordIsRefused) {
  std::istringstream in(R"({"type":"pair","unit_a":"a","unit_b":"b","bw_uni_gbps":1,"p99_us":2})");
  auto runs = readResults(in, "x.jsonl");
  ASSERT_FALSE(runs.isOk());
  EXPECT_NE(runs.status().message().find("before any pairs_run"), std::string::npos);
}

}  // namespace
}  // namespace ccscope::reports
