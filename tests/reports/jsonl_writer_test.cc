#include "reports/jsonl_writer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace ccscope::reports {
namespace {

TEST(JsonLinesWriterTest, RunThenResultsEachOnItsOwnFlushedLine) {
  std::string path = ::testing::TempDir() + "/ccscope_jsonl_test.jsonl";
  auto w = JsonLinesWriter::open(path);
  ASSERT_TRUE(w.isOk());
  RunMetadata meta;
  meta.argv = {"ccscope", "bench", "allreduce"};
  meta.env["CCSCOPE_X"] = std::string("bad\xff utf8");
  (*w)->onRun(meta);
  Measurement m;
  m.bytes = 4096;
  m.lat.p99 = 12.5;
  m.wrong = 0;
  (*w)->onMeasurement(m);
  // Flushed row by row: readable before the writer is closed.
  std::ifstream in(path);
  std::string l1, l2;
  ASSERT_TRUE(std::getline(in, l1));
  ASSERT_TRUE(std::getline(in, l2));
  auto run = nlohmann::json::parse(l1);
  auto res = nlohmann::json::parse(l2);
  EXPECT_EQ(run["type"], "run");
  EXPECT_EQ(res["type"], "result");
  for (const char* k :
       {"collective", "algorithm", "transport", "ranks", "bytes", "count", "dtype", "redop",
        "in_place", "iters", "time_us", "algbw_gbps", "busbw_gbps", "wrong"})
    EXPECT_TRUE(res.contains(k)) << k;
  EXPECT_EQ(res["lat_us"]["p99"], 12.5);
  EXPECT_EQ(res["bytes"], 4096);
}

TEST(JsonLinesWriterTest, UnwritablePathIsAnError) {
  EXPECT_FALSE(JsonLinesWriter::open("/nonexistent-dir/x.jsonl").isOk());
}

}  // namespace
}  // namespace ccscope::reports
