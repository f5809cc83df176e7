// Hostile input: binary garbage, huge lines, invalid UTF-8, truncated gzip. The analyzer must
// neither crash nor grow without bound, and its JSON must stay valid.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "diagnostics/analyze/input_paths.h"
#include "diagnostics/analyze/line_reader.h"
#include "test_util.h"

namespace ccscope::diagnostics {
namespace {

namespace fs = std::filesystem;

class RobustnessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ccscope_robust_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::string gzipped(const std::string& text) {
  uLongf size = compressBound(text.size()) + 64;
  std::string out(size, '\0');
  // A gzip header/trailer via deflateInit2 with windowBits 31.
  z_stream zs{};
  deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

TEST_F(RobustnessTest, GzipInputIsReadAndTruncatedGzipEndsWithANote) {
  std::string text;
  for (int i = 0; i < 20000; ++i)
    text += "h1:1:2 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P\n";
  text += "h1:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with status=12\n";
  const std::string gz = gzipped(text);
  std::ofstream(dir_ / "full.log.gz", std::ios::binary) << gz;
  std::ofstream(dir_ / "cut.log.gz", std::ios::binary) << gz.substr(0, gz.size() / 2);

  auto full = analyzeInputs({(dir_ / "full.log.gz").string()}, {});
  ASSERT_TRUE(full.isOk());
  EXPECT_EQ(full->diagnosis.layer, core::Layer::kRdma);
  EXPECT_EQ(full->diagnosis.lines, 20001);

  auto cut = analyzeInputs({(dir_ / "cut.log.gz").string()}, {});
  ASSERT_TRUE(cut.isOk());
  EXPECT_LT(cut->diagnosis.lines, 20001);
  ASSERT_FALSE(cut->notes.empty());
  EXPECT_NE(cut->notes.front().find("ended early"), std::string::npos);
}

TEST_F(RobustnessTest, MegabyteLinesAreCappedAndStillMatched) {
  std::string huge = "NCCL WARN Bootstrap : no socket interface found ";
  huge += std::string(3 << 20, 'x');
  std::ofstream(dir_ / "huge.log") << "first\n" << huge << "\nlast line\n";
  auto reader = LineReader::open((dir_ / "huge.log").string());
  ASSERT_TRUE(reader.isOk());
  std::string_view line;
  std::vector<size_t> sizes;
  while ((*reader)->next(line)) sizes.push_back(line.size());
  ASSERT_EQ(sizes.size(), 3u);
  EXPECT_EQ(sizes[1], kMaxLineBytes);
  EXPECT_EQ(sizes[2], 9u);

  auto r = analyzeInputs({(dir_ / "huge.log").string()}, {});
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->diagnosis.layer, core::Layer::kHostNetwork);
  for (const auto& e : r->diagnosis.evidence) EXPECT_LE(e.text.size(), 600u);
}

TEST_F(RobustnessTest, BinaryGarbageAndInvalidUtf8KeepJsonValid) {
  std::mt19937 rng(42);
  std::string junk(1 << 20, '\0');
  for (auto& c : junk) c = static_cast<char>(rng());
  junk +=
      "\nNCCL WARN Error while creating shared memory segment /dev/shm/nccl-\xff\xfe\xc3 (size "
      "1)\n";
  std::ofstream(dir_ / "junk.bin", std::ios::binary) << junk;
  auto r = analyzeInputs({(dir_ / "junk.bin").string()}, {});
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->diagnosis.layer, core::Layer::kLibrary);
  const std::string text = reports::toJsonText(r->diagnosis);
  const auto parsed = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded());
  EXPECT_EQ(parsed["layer"], "library");
}

TEST_F(RobustnessTest, DirectoriesAreSearchedRecursively) {
  fs::create_directories(dir_ / "a" / "b");
  std::ofstream(dir_ / "a" / "b" / "rank_1.log")
      << "NCCL WARN Bootstrap : no socket interface found\n";
  std::ofstream(dir_ / "a" / "x.log") << "hello\n";
  auto inputs = expandInputs({dir_.string()});
  ASSERT_TRUE(inputs.isOk());
  EXPECT_EQ(inputs->size(), 2u);
  auto r = analyzeInputs(*inputs, {});
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->diagnosis.culprit.ranks, std::vector<int>{1});
}

}  // namespace
}  // namespace ccscope::diagnostics
