#include "bench/stats.h"

#include <gtest/gtest.h>

namespace ccscope::bench {
namespace {

TEST(LatencyStatsTest, NearestRankPercentiles) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  auto s = latencyStats(v);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.p50, 50);
  EXPECT_EQ(s.p90, 90);
  EXPECT_EQ(s.p99, 99);
  EXPECT_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
}

TEST(LatencyStatsTest, TailIsVisibleWithFewSamples) {
  auto s = latencyStats({1, 1, 1, 1, 1, 1, 1, 1, 1, 50});
  EXPECT_EQ(s.p50, 1);
  EXPECT_EQ(s.p99, 50);
  EXPECT_GT(s.stdev, 10);
}

}  // namespace
}  // namespace ccscope::bench
