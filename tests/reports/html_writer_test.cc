#include "reports/html_writer.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "tests/reports/report_test_util.h"

namespace ccscope::reports {
namespace {

std::string renderHtml(const ReportModel& model) {
  std::ostringstream out;
  writeHtml(model, out);
  return out.str();
}

using testing::countOf;

TEST(HtmlWriterTest, OnePathPerSeriesWithOnePointPerSize) {
  RunRecords a = testing::sweep("a", {"ring", "tree"});
  RunRecords b = testing::sweep("b", {"ring"});
  const std::string html = renderHtml(buildReportModel({a, b}, {}, false, Criteria{}));
  // 3 series (a·ring, a·tree, b·ring), each in the busbw and the latency chart.
  EXPECT_EQ(countOf(html, "class=\"series-line\""), 6u);
  EXPECT_EQ(countOf(html, "data-series=\"a · shm · tree\" data-points=\"9\""), 2u);
  std::regex path("class=\"series-line\"[^>]* d=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), path); it != std::sregex_iterator();
       ++it) {
    const std::string d = (*it)[1];
    EXPECT_EQ(std::count(d.begin(), d.end(), 'M') + std::count(d.begin(), d.end(), 'L'), 9) << d;
  }
  EXPECT_EQ(countOf(html, "<tr class=\"ok\">"), a.rows.size() + b.rows.size());
  EXPECT_EQ(countOf(html, "class=\"baseline-line\""), 0u);
}

TEST(HtmlWriterTest, SelfContainedNothingToFetch) {
  const std::string html =
      renderHtml(buildReportModel({testing::sweep("a")}, {}, false, Criteria{}));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  std::string without_ns =
      std::regex_replace(html, std::regex("xmlns=\"http://www.w3.org/2000/svg\""), "");
  EXPECT_EQ(without_ns.find("http://"), std::string::npos);
  EXPECT_EQ(without_ns.find("https://"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_NE(html.find("id=\"heatmap\""), std::string::npos);
}

TEST(HtmlWriterTest, HoverTitlesBaselineDashedVerdictsHighlighted) {
  RunRecords base = testing::sweep("base");
  RunRecords now = testing::sweep("now");
  now.rows[2].wrong = 4;
  testing::slowDown(now.rows[6], 3);
  const std::string html = renderHtml(buildReportModel({now}, {base}, true, Criteria{}));
  EXPECT_EQ(countOf(html, "class=\"baseline-line\" fill=\"none\" stroke-dasharray"), 2u);
  EXPECT_NE(html.find("<title>shm · ring\n8 (8 B), out-of-place\nbusbw"), std::string::npos);
  EXPECT_EQ(countOf(html, "<tr class=\"fail-wrong\">"), 1u);
  EXPECT_EQ(countOf(html, "<tr class=\"fail-regression\">"), 1u);
  EXPECT_NE(html.find("class=\"verdict fail\""), std::string::npos);
  EXPECT_NE(html.find("id=\"failures\""), std::string::npos);
}

TEST(HtmlWriterTest, DiagnosisPanelOnlyWhenTheResultsHoldOne) {
  RunRecords run = testing::sweep("a");
  EXPECT_EQ(renderHtml(buildReportModel({run}, {}, false, Criteria{})).find("id=\"diagnosis\""),
            std::string::npos);
  Diagnosis d;
  d.layer = core::Layer::kHostNetwork;
  d.conclusive = true;
  d.verdict = "rank 2 cannot reach rank 3";
  d.next_step = "check the firewall";
  d.culprit.ranks = {2, 3};
  d.evidence = {{"rank2.log", 17, "connect: No route to host"}};
  run.diagnoses.push_back(d);
  const std::string html = renderHtml(buildReportModel({run}, {}, false, Criteria{}));
  EXPECT_NE(html.find("id=\"diagnosis\""), std::string::npos);
  EXPECT_NE(html.find("host-network"), std::string::npos);
  EXPECT_NE(html.find("rank2.log:17"), std::string::npos);
  EXPECT_NE(html.find("check the firewall"), std::string::npos);
}

TEST(HtmlWriterTest, UserTextIsEscaped) {
  RunRecords run = testing::sweep("<script>alert(1)</script>");
  run.rows[0].algorithm = "\"><img src=x onerror=alert(1)>";
  run.meta->env["X"] = "</style><script>";
  const std::string html =
      renderHtml(buildReportModel({run, testing::sweep("b")}, {}, false, Criteria{}));
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("</style><script>"), std::string::npos);
  EXPECT_EQ(countOf(html, "<script>"), 1u);  // ours only
}

}  // namespace
}  // namespace ccscope::reports
