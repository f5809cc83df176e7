#include "bench/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

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

TEST(LatencyStatsTest, HistogramSeparatesModesAQuarterOctaveApart) {
  // Three modes as the oversubscribed 8 B allreduce shows them: one, two and three context
  // switches per iteration.
  std::vector<double> v;
  v.reserve(60 + 30 + 10);
  for (int i = 0; i < 60; ++i) v.push_back(4.8 + 0.01 * (i % 5));
  for (int i = 0; i < 30; ++i) v.push_back(8.3);
  for (int i = 0; i < 10; ++i) v.push_back(12.5);
  auto s = latencyStats(v);
  ASSERT_EQ(s.hist.size(), 3u);
  EXPECT_DOUBLE_EQ(s.hist[0].lower_us, 4.757);  // 2^(9/4)
  EXPECT_DOUBLE_EQ(s.hist[1].lower_us, 8);      // 2^(12/4)
  EXPECT_DOUBLE_EQ(s.hist[2].lower_us, 11.31);  // 2^(14/4)
  EXPECT_EQ(s.hist[0].count, 60u);
  EXPECT_EQ(s.hist[1].count, 30u);
  EXPECT_EQ(s.hist[2].count, 10u);
}

TEST(LatencyStatsTest, EverySampleInTheBucketThatHoldsIt) {
  std::vector<double> v;
  v.reserve(500);
  for (int i = 0; i < 500; ++i) v.push_back(0.2 + i * i * 0.013);  // 0.2 us to 3.2 ms
  auto s = latencyStats(v);
  uint64_t total = 0;
  for (size_t b = 0; b < s.hist.size(); ++b) {
    total += s.hist[b].count;
    if (b) {
      EXPECT_GT(s.hist[b].lower_us, s.hist[b - 1].lower_us);
    }
  }
  EXPECT_EQ(total, v.size());
  const double width = std::exp2(1.0 / reports::kHistBucketsPerOctave);
  for (double x : v) {
    // The bucket whose range holds x (edges rounded to 4 digits: 0.1% of slack).
    auto it = std::find_if(s.hist.begin(), s.hist.end(), [&](const reports::HistBucket& b) {
      return x >= b.lower_us * 0.999 && x < b.lower_us * width * 1.001;
    });
    EXPECT_NE(it, s.hist.end()) << x;
  }
  EXPECT_TRUE(latencyStats({}).hist.empty());
  EXPECT_EQ(latencyStats({0.0}).hist.size(), 1u);  // zero: the floor's bucket, not -inf
}

}  // namespace
}  // namespace ccscope::bench
