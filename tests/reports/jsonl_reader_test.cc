#include "reports/jsonl_reader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "reports/jsonl_writer.h"
#include "tests/reports/report_test_util.h"

namespace ccscope::reports {
namespace {

using testing::row;

std::string lines(const std::vector<nlohmann::json>& records) {
  std::string out;
  for (const auto& r : records) out += r.dump() + "\n";
  return out;
}

TEST(JsonlReaderTest, ReadsBackWhatTheWriterWrote) {
  RunMetadata meta;
  meta.collective = "allreduce";
  meta.hosts = {"a", "b"};
  meta.env = {{"NCCL_DEBUG", "INFO"}};
  meta.interleaved = true;
  meta.host_pages = "base";
  Measurement m = row(4096, true);
  m.wrong = 3;
  m.root = 2;
  m.requested_algorithm = "auto";
  m.segment_bytes = 262144;
  m.lat.hist = {{4.757, 60}, {8, 30}, {11.31, 10}};
  std::istringstream in(lines({toJson(meta), toJson(m)}));
  auto runs = readResults(in, "dir/results.jsonl");
  ASSERT_TRUE(runs.isOk()) << runs.status().toString();
  ASSERT_EQ(runs->size(), 1u);
  const RunRecords& r = (*runs)[0];
  EXPECT_EQ(r.label, "results");
  ASSERT_TRUE(r.meta.has_value());
  EXPECT_EQ(r.meta->hosts, meta.hosts);
  EXPECT_EQ(r.meta->env, meta.env);
  EXPECT_TRUE(r.meta->interleaved);
  EXPECT_EQ(r.meta->host_pages, "base");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].requested_algorithm, "auto");
  ASSERT_EQ(r.rows[0].lat.hist.size(), 3u);
  EXPECT_EQ(r.rows[0].lat.hist[1].lower_us, 8);
  EXPECT_EQ(r.rows[0].lat.hist[2].count, 10u);
  EXPECT_EQ(toJson(r.rows[0]), toJson(m));  // every field, bit for bit
}

TEST(JsonlReaderTest, MalformedLineNamesFileAndLine) {
  std::istringstream in(lines({toJson(RunMetadata{}), toJson(row(8))}) +
                        "{\"type\": \"result\",\n");
  auto runs = readResults(in, "r.jsonl");
  ASSERT_FALSE(runs.isOk());
  EXPECT_NE(runs.status().message().find("r.jsonl:3"), std::string::npos)
      << runs.status().message();
  EXPECT_NE(runs.status().message().find("malformed JSON"), std::string::npos);
}

TEST(JsonlReaderTest, MissingOrMistypedFieldIsAnError) {
  nlohmann::json j = toJson(row(8));
  j.erase("bytes");
  std::istringstream in(lines({j}));
  auto runs = readResults(in, "r.jsonl");
  ASSERT_FALSE(runs.isOk());
  EXPECT_NE(runs.status().message().find("r.jsonl:1: field 'bytes'"), std::string::npos)
      << runs.status().message();
  j = toJson(row(8));
  j["lat_us"]["p50"] = "fast";
  std::istringstream in2(lines({j}));
  EXPECT_FALSE(readResults(in2, "r.jsonl").isOk());
  for (const char* bad : {R"({"4": 2})", R"([[4, -2]])", R"([[4]])", R"([["4", 2]])"}) {
    j = toJson(row(8));
    j["lat_us"]["hist"] = nlohmann::json::parse(bad);
    std::istringstream in3(lines({j}));
    auto r = readResults(in3, "r.jsonl");
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_NE(r.status().message().find("lat_us.hist"), std::string::npos) << r.status().message();
  }
}

TEST(JsonlReaderTest, NewerSchemaIsRejectedUnknownTypesAreSkipped) {
  nlohmann::json newer = toJson(row(8));
  newer["schema"] = kSchemaVersion + 1;
  std::istringstream in(lines({newer}));
  EXPECT_FALSE(readResults(in, "r.jsonl").isOk());
  std::istringstream in2(
      lines({toJson(row(8)), {{"type", "pairs"}, {"schema", 1}}, toJson(row(16))}));
  auto runs = readResults(in2, "r.jsonl");
  ASSERT_TRUE(runs.isOk());
  EXPECT_EQ((*runs)[0].rows.size(), 2u);
}

TEST(JsonlReaderTest, SeveralRunsInOneFileAndDiagnosisRecords) {
  Diagnosis d;
  d.layer = core::Layer::kHostNetwork;
  d.verdict = "rank 3 cannot reach rank 4";
  nlohmann::json dj = toJson(d);
  dj["type"] = "diagnosis";
  std::istringstream in(
      lines({toJson(RunMetadata{}), toJson(row(8)), toJson(RunMetadata{}), toJson(row(8)), dj}));
  auto runs = readResults(in, "x.jsonl");
  ASSERT_TRUE(runs.isOk());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[1].label, "x#2");
  ASSERT_EQ((*runs)[1].diagnoses.size(), 1u);
  EXPECT_EQ((*runs)[1].diagnoses[0].verdict, d.verdict);
}

TEST(JsonlReaderTest, AcceptsPrettyPrintedDiagnosisOfAnalyze) {
  Diagnosis d;
  d.layer = core::Layer::kRdma;
  d.verdict = "retry exceeded on mlx5_0";
  std::istringstream in(toJsonText(d, 2));
  auto runs = readResults(in, "diag.json");
  ASSERT_TRUE(runs.isOk()) << runs.status().toString();
  ASSERT_EQ((*runs)[0].diagnoses.size(), 1u);
  EXPECT_EQ((*runs)[0].diagnoses[0].layer, core::Layer::kRdma);
}

TEST(JsonlReaderTest, FilesGetUniqueLabelsAndUnreadableFilesFail) {
  const std::string dir = ::testing::TempDir();
  for (const char* sub : {"/ra", "/rb"}) {
    std::filesystem::create_directories(dir + sub);
    std::ofstream(dir + sub + "/run.jsonl") << lines({toJson(RunMetadata{}), toJson(row(8))});
  }
  auto runs = readResultsFiles({dir + "/ra/run.jsonl", dir + "/rb/run.jsonl"});
  ASSERT_TRUE(runs.isOk());
  EXPECT_EQ((*runs)[0].label, "run");
  EXPECT_EQ((*runs)[1].label, "run~2");
  auto missing = readResultsFile(dir + "/nope.jsonl");
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("nope.jsonl"), std::string::npos);
  std::ofstream(dir + "/empty.jsonl").close();
  EXPECT_FALSE(readResultsFile(dir + "/empty.jsonl").isOk());
}

}  // namespace
}  // namespace ccscope::reports
