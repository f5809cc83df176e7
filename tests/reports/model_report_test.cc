#include <gtest/gtest.h>

#include <sstream>

#include "reports/html_writer.h"
#include "reports/jsonl_reader.h"
#include "reports/model_records.h"
#include "tests/reports/report_test_util.h"

namespace ccscope::reports {
namespace {

std::string predictions(const std::vector<std::pair<std::string, uint64_t>>& rows, int ranks) {
  std::string out = R"({"type":"model_run","topology":"fit:shm","source":"fitted"})"
                    "\n";
  for (const auto& [algo, bytes] : rows) {
    PredictionRecord p{"allreduce", algo, "schedule", ranks, 1, bytes, 100, 1, 1.5, false};
    out += predictionToJson(p).dump() + "\n";
  }
  return out;
}

TEST(ModelReportTest, PredictionsReadBackAsAModelRun) {
  std::istringstream in(predictions({{"ring", 1 << 20}, {"tree", 1 << 20}}, 4));
  auto runs = readResults(in, "pred.jsonl");
  ASSERT_TRUE(runs.isOk()) << runs.status().toString();
  ASSERT_EQ(runs->size(), 1u);
  ASSERT_TRUE((*runs)[0].model.has_value());
  EXPECT_EQ((*runs)[0].model->topology, "fit:shm");
  ASSERT_EQ((*runs)[0].model->predictions.size(), 2u);
  EXPECT_EQ((*runs)[0].model->predictions[1].algorithm, "tree");
  EXPECT_DOUBLE_EQ((*runs)[0].model->predictions[0].busbw_gbps, 1.5);
}

TEST(ModelReportTest, APredictionBeforeItsModelRunIsAnError) {
  std::istringstream in(
      R"({"type":"prediction","collective":"allreduce","algorithm":"ring","ranks":4,)"
      R"("bytes":1024,"time_us":1,"busbw_gbps":1})"
      "\n");
  EXPECT_FALSE(readResults(in, "p.jsonl").isOk());
}

TEST(ModelReportTest, HtmlOverlaysMeasuredRowsOfTheSameRankCount) {
  std::istringstream in(predictions({{"ring", 1 << 20}, {"ring", 4 << 20}}, 4));
  auto runs = readResults(in, "pred.jsonl");
  ASSERT_TRUE(runs.isOk());
  runs->push_back(testing::sweep("measured", {"ring"}));  // 4 ranks, allreduce ring rows
  std::ostringstream html;
  writeHtml(buildReportModel(*runs, {}, false, Criteria{}), html);
  const std::string h = html.str();
  EXPECT_NE(h.find("Model: fit:shm"), std::string::npos);
  EXPECT_NE(h.find("data-series=\"ring predicted\""), std::string::npos) << h.substr(0, 200);
  EXPECT_NE(h.find("data-series=\"ring measured\""), std::string::npos);
}

}  // namespace
}  // namespace ccscope::reports
