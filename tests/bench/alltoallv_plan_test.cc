#include "bench/alltoallv_plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>

namespace ccscope::bench {
namespace {

using collectives::AlltoallvPlan;

AlltoallvPlan planFor(const std::string& text, int ranks, uint64_t count) {
  auto spec = parseAlltoallvSpec(text);
  EXPECT_TRUE(spec.isOk()) << spec.status().toString();
  auto plan = makeAlltoallvPlan(*spec, ranks, count);
  EXPECT_TRUE(plan.isOk()) << plan.status().toString();
  return plan.isOk() ? *plan : AlltoallvPlan{};
}

// A temporary file removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/ccscope_a2av_XXXXXX";
    int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = name;
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class AlltoallvPlanTest : public ::testing::TestWithParam<std::tuple<std::string, int, uint64_t>> {
};

TEST_P(AlltoallvPlanTest, EveryRankSendsExactlyCount) {
  const auto& [text, ranks, count] = GetParam();
  AlltoallvPlan p = planFor(text, ranks, count);
  ASSERT_EQ(p.ranks, ranks);
  ASSERT_EQ(p.matrix.size(), static_cast<size_t>(ranks) * ranks);
  for (int s = 0; s < ranks; ++s) EXPECT_EQ(p.sendTotal(s), count) << text << " rank " << s;
  // Deterministic: every rank derives the same matrix.
  EXPECT_EQ(planFor(text, ranks, count).matrix, p.matrix);
}

INSTANTIATE_TEST_SUITE_P(Patterns, AlltoallvPlanTest,
                         ::testing::Combine(::testing::Values("uniform", "skewed:1.5", "skewed:0",
                                                              "moe:8,2", "moe:3,3", "moe:64,8"),
                                            ::testing::Values(1, 2, 3, 7, 8, 9, 17),
                                            ::testing::Values(uint64_t{0}, uint64_t{1}, uint64_t{5},
                                                              uint64_t{1000003})));

TEST(AlltoallvPlanTest, UniformSplitsLikeTheEqualBlocks) {
  AlltoallvPlan p = planFor("uniform", 3, 10);
  EXPECT_EQ(p.matrix, (std::vector<uint64_t>{4, 3, 3, 4, 3, 3, 4, 3, 3}));
}

TEST(AlltoallvPlanTest, SkewedConcentratesOnNearNeighbours) {
  const int n = 8;
  AlltoallvPlan p = planFor("skewed:1.5", n, 1 << 20);
  for (int s = 0; s < n; ++s)
    for (int k = 1; k < n; ++k)  // weight falls with the distance (d - s) mod n
      EXPECT_GT(p.at(s, (s + k - 1) % n), p.at(s, (s + k) % n)) << s << " " << k;
  // 1/(1+k)^1.5 relative to the own block, within rounding.
  EXPECT_NEAR(static_cast<double>(p.at(2, 3)) / p.at(2, 2), 1 / std::pow(2.0, 1.5), 1e-5);
  AlltoallvPlan flat = planFor("skewed:0", n, 800);
  for (uint64_t x : flat.matrix) EXPECT_EQ(x, 100u);
}

TEST(AlltoallvPlanTest, MoeMakesSomeRanksReceiveFarMore) {
  const int n = 8;
  AlltoallvPlan p = planFor("moe:8,2", n, 1 << 20);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int r = 0; r < n; ++r) lo = std::min(lo, p.recvTotal(r)), hi = std::max(hi, p.recvTotal(r));
  EXPECT_GT(hi, 3 * lo) << "Zipf popularity should make the hottest rank receive far more";
  // Rows differ (tokens route independently) but share the popularity: not identical rows.
  EXPECT_NE(std::vector<uint64_t>(p.matrix.begin(), p.matrix.begin() + n),
            std::vector<uint64_t>(p.matrix.begin() + n, p.matrix.begin() + 2 * std::ptrdiff_t{n}));
  // With every expert picked (TOPK = EXPERTS) each token reaches every expert once: uniform.
  AlltoallvPlan all = planFor("moe:8,8", n, 800);
  for (uint64_t x : all.matrix) EXPECT_EQ(x, 100u);
  // Fewer experts than ranks: ranks without an expert receive nothing.
  AlltoallvPlan few = planFor("moe:2,1", 4, 1000);
  EXPECT_EQ(few.recvTotal(1) + few.recvTotal(3), 0u);
  EXPECT_EQ(few.recvTotal(0) + few.recvTotal(2), 4000u);
}

TEST(AlltoallvPlanTest, FileWeightsAreScaledToCount) {
  TempFile f("# weights\n1 0 3\n0 1 1  # comment\n\n2 2 0\n");
  AlltoallvPlan p = planFor("file:" + f.path(), 3, 8);
  EXPECT_EQ(p.matrix, (std::vector<uint64_t>{2, 0, 6, 0, 4, 4, 4, 4, 0}));
}

TEST(AlltoallvPlanTest, ApportionRoundsToTheExactTotal) {
  auto parts = apportion({1, 1, 1}, 10);
  EXPECT_EQ(parts, (std::vector<uint64_t>{4, 3, 3}));
  parts = apportion({0.1, 0.2, 0.7, 0}, 7);
  EXPECT_EQ(std::accumulate(parts.begin(), parts.end(), uint64_t{0}), 7u);
  EXPECT_EQ(parts[3], 0u) << "a zero weight never gets a remainder";
  EXPECT_EQ(parts, (std::vector<uint64_t>{1, 1, 5, 0}));
}

core::Status planStatus(const std::string& text, int ranks, uint64_t count = 100) {
  auto spec = parseAlltoallvSpec(text);
  if (!spec.isOk()) return spec.status();
  return makeAlltoallvPlan(*spec, ranks, count).status();
}

TEST(AlltoallvPlanTest, RejectsBadSpecsWithAUsableMessage) {
  for (const char* bad : {"skewed", "skewed:", "skewed:-1", "skewed:x", "skewed:1.5x", "moe:8",
                          "moe:0,1", "moe:2,3", "moe:8,2.5", "file:", "zipf:2", "uniform:3"}) {
    core::Status s = planStatus(bad, 4);
    EXPECT_EQ(s.code(), core::Code::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("--a2av"), std::string::npos) << s.message();
  }
}

TEST(AlltoallvPlanTest, RejectsAFileOfTheWrongShape) {
  TempFile rows("1 1 1\n1 1 1\n");
  core::Status s = planStatus("file:" + rows.path(), 3);
  EXPECT_EQ(s.code(), core::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("2 rows, want a 3x3 matrix"), std::string::npos) << s.message();
  TempFile cols("1 1 1\n1 1\n1 1 1\n");
  s = planStatus("file:" + cols.path(), 3);
  EXPECT_EQ(s.code(), core::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("line 2: 2 weights, want 3"), std::string::npos) << s.message();
  TempFile negative("1 1\n-1 1\n");
  EXPECT_EQ(planStatus("file:" + negative.path(), 2).code(), core::Code::kInvalidArgument);
  TempFile zero_row("1 1\n0 0\n");
  s = planStatus("file:" + zero_row.path(), 2);
  EXPECT_NE(s.message().find("row 1 is all zero"), std::string::npos) << s.message();
  EXPECT_TRUE(planStatus("file:" + zero_row.path(), 2, 0).isOk())
      << "nothing to send: no row needed";
  EXPECT_EQ(planStatus("file:/nonexistent/ccscope.txt", 2).code(), core::Code::kInvalidArgument);
}

}  // namespace
}  // namespace ccscope::bench
