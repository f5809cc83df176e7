// `ccscope burnin` records in reports: a run recorded on the network-namespace lab (6 hosts;
// host 4 throttled for the pairs and sweep, the link h1 <-> h2 throttled 15 s into the soak)
// read back, the HTML burn-in section, the Markdown verdict and JUnit's testcases, and the same
// run cut half-way through its soak (killed): what was sampled renders, and it does not pass.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "reports/html_writer.h"
#include "reports/jsonl_reader.h"
#include "reports/junit_writer.h"
#include "reports/markdown_writer.h"
#include "reports/report_model.h"
#include "tests/reports/report_test_util.h"

namespace ccscope::reports {
namespace {

const std::string kRun = std::string(CCSCOPE_TEST_DATA) + "/burnin/netns-6hosts-burnin.jsonl";

ReportModel modelOf(const std::string& path) {
  auto runs = readResultsFile(path);
  EXPECT_TRUE(runs.isOk()) << runs.status().toString();
  return buildReportModel(runs.isOk() ? *runs : std::vector<RunRecords>{}, {}, false, Criteria{});
}

const BurninRecords* burninOf(const ReportModel& m) {
  for (const RunRecords& r : m.runs)
    if (r.burnin) return &*r.burnin;
  return nullptr;
}

using testing::countOf;

TEST(BurninReportTest, TheRecordedRunReadsWithEveryPhase) {
  const ReportModel m = modelOf(kRun);
  // The burn-in, its pairs run and its sweep run, in file order.
  ASSERT_EQ(m.runs.size(), 3u);
  EXPECT_TRUE(m.runs[0].burnin);
  EXPECT_TRUE(m.runs[1].pairs);
  EXPECT_FALSE(m.runs[2].rows.empty());
  const BurninRecords* b = burninOf(m);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->verdict, "failed");
  EXPECT_EQ(b->ranks, 12);
  EXPECT_EQ(b->phases,
            (std::vector<std::string>{"preflight", "pairs", "sweep", "soak", "congestion"}));
  EXPECT_EQ(b->preflight.size(), 4u);
  EXPECT_EQ(b->soak.size(), 13u);  // 6 links x (bandwidth, p99) and the allreduce
  EXPECT_EQ(b->congestion.size(), 3u);
  EXPECT_EQ(b->hosts.size(), 6u);
  size_t failed_hosts = 0;
  for (const auto& [h, v] : b->hosts) failed_hosts += v != "pass";
  EXPECT_EQ(failed_hosts, 1u);
  // The throttled link in the soak, from after 15 s.
  bool link = false;
  for (const BurninFindingRecord& f : b->findings)
    if (f.kind == "link" && f.phase == "soak") {
      link = true;
      EXPECT_NE(f.unit_a.find("h1"), std::string::npos);
      EXPECT_NE(f.unit_b.find("h2"), std::string::npos);
      EXPECT_GT(f.since_s, 15);
      EXPECT_LT(f.since_s, 25);
    }
  EXPECT_TRUE(link);
  EXPECT_FALSE(m.passed());
  EXPECT_EQ(m.burninFailures(), 1u);
}

TEST(BurninReportTest, HtmlHasTheSectionWithSoakChartsAndCongestion) {
  std::ostringstream out;
  writeHtml(modelOf(kRun), out);
  const std::string html = out.str();
  EXPECT_EQ(countOf(html, "<section id=\"burnin\""), 1u);
  EXPECT_NE(html.find("data-verdict=\"failed\""), std::string::npos);
  EXPECT_EQ(countOf(html, "Soak: "), 3u);  // link bandwidth, link p99, collectives
  EXPECT_NE(html.find("seconds into the soak"), std::string::npos);
  EXPECT_GE(countOf(html, "since "), 1u);  // the throttled link's shading
  EXPECT_EQ(countOf(html, "<table class=\"congestion\">"), 1u);
  EXPECT_NE(html.find("<table class=\"preflight\">"), std::string::npos);
}

TEST(BurninReportTest, MarkdownAndJunitCarryTheVerdicts) {
  const ReportModel m = modelOf(kRun);
  std::ostringstream md, xml;
  writeMarkdown(m, md);
  writeJunit(m, xml);
  EXPECT_NE(md.str().find("### Burn-in: "), std::string::npos);
  EXPECT_NE(md.str().find("1 burn-in not passed"), std::string::npos);
  EXPECT_NE(md.str().find("Congestion impact factor over 3 repeats"), std::string::npos);
  const std::string j = xml.str();
  EXPECT_NE(j.find("<testsuite name=\"burnin "), std::string::npos);
  // preflight, 6 hosts, 6 soaked links, the allreduce: the host and the link fail. (The soak's
  // allreduce, by recursive halving and doubling here, never crossed the throttled link.)
  EXPECT_EQ(countOf(j, "classname=\"ccscope.burnin."), 14u);
  EXPECT_EQ(countOf(j, "classname=\"ccscope.burnin.host\"><"), 0u);
  size_t burnin_failures = 0;
  for (size_t p = j.find("ccscope.burnin."); p != std::string::npos;
       p = j.find("ccscope.burnin.", p + 1))
    burnin_failures += j.compare(j.find('>', p) - 1, 2, "\">") == 0 &&
                       j.compare(j.find('>', p) + 1, 15, "\n      <failure") == 0;
  EXPECT_EQ(burnin_failures, 2u);
}

TEST(BurninReportTest, ARunKilledHalfWayRendersWhatItSampledAndDoesNotPass) {
  // Everything up to the tenth soak sample, as a SIGKILL would leave the file.
  std::ifstream in(kRun);
  const std::string cut = std::string(::testing::TempDir()) + "/burnin-cut.jsonl";
  std::ofstream out(cut);
  int samples = 0;
  for (std::string line; std::getline(in, line) && samples < 10;) {
    out << line << "\n";
    samples += line.find("\"soak_sample\"") != std::string::npos;
  }
  out.close();
  const ReportModel m = modelOf(cut);
  const BurninRecords* b = burninOf(m);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->verdict.empty());
  size_t points = 0;
  for (const SoakSeries& s : b->soak) points += s.t_s.size();
  EXPECT_EQ(points, 2u * 10 - 1);  // 10 samples; the collective's one of them
  EXPECT_FALSE(m.passed());
  bool said = false;
  for (const std::string& l : m.failureLines())
    said |= l.find("ended before its verdict") != std::string::npos;
  EXPECT_TRUE(said);
  std::ostringstream html;
  writeHtml(m, html);
  EXPECT_NE(html.str().find("data-verdict=\"incomplete\""), std::string::npos);
  EXPECT_NE(html.str().find("Soak: link bandwidth"), std::string::npos);
}

TEST(BurninReportTest, ASoakRecordBeforeItsRunIsRefused) {
  const std::string path = std::string(::testing::TempDir()) + "/burnin-orphan.jsonl";
  std::ofstream(path)
      << R"({"type":"soak_sample","kind":"link","t_s":1,"unit_a":"a","unit_b":"b","bw_uni_gbps":1,"p99_us":5})"
      << "\n";
  auto runs = readResultsFile(path);
  ASSERT_FALSE(runs.isOk());
  EXPECT_NE(runs.status().message().find("before any burnin_run"), std::string::npos);
}

}  // namespace
}  // namespace ccscope::reports
