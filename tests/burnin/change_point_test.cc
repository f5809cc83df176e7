#include "burnin/change_point.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>

namespace ccscope::burnin {
namespace {

// n samples every 2 s at `level`, times `factor` from sample `at` on, with multiplicative noise
// (+-noise) and, every `spike_every` samples, one sample at a tenth (a scheduling hiccup).
std::vector<SeriesPoint> series(size_t n, size_t at, double factor, double noise,
                                size_t spike_every, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(1 - noise, 1 + noise);
  std::vector<SeriesPoint> out;
  for (size_t i = 0; i < n; ++i) {
    double v = (i >= at ? factor : 1.0) * jitter(rng);
    if (spike_every > 0 && i % spike_every == spike_every - 1) v /= 10;
    out.push_back({2.0 * static_cast<double>(i), v});
  }
  return out;
}

TEST(ChangePointTest, ALargeDropIsPlacedWhereItStarted) {
  // A throttled link: 1/500 of its level from sample 10 of 30, as in netns.burnin.soak. The
  // medians' z favours balanced splits; the place must still be sample 10, not the middle.
  const ChangePoint cp = findChangePoint(series(30, 10, 0.002, 0.4, 7, 1));
  ASSERT_TRUE(cp.found);
  EXPECT_EQ(cp.index, 10u);
  EXPECT_DOUBLE_EQ(cp.t_s, 20.0);
  EXPECT_LT(cp.after / cp.before, 0.01);
}

TEST(ChangePointTest, AModestDropIsFoundNearItsStart) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const ChangePoint cp = findChangePoint(series(60, 35, 0.5, 0.1, 0, seed));
    ASSERT_TRUE(cp.found) << "seed " << seed;
    EXPECT_NEAR(static_cast<double>(cp.index), 35, 2) << "seed " << seed;
    EXPECT_NEAR(cp.after / cp.before, 0.5, 0.1) << "seed " << seed;
  }
}

TEST(ChangePointTest, NoisyHealthySeriesWithHiccupsHaveNoChange) {
  int found = 0;
  for (uint64_t seed = 1; seed <= 500; ++seed)
    found += findChangePoint(series(30, 30, 1, 0.3, 5, seed)).found ? 1 : 0;
  EXPECT_EQ(found, 0);
}

TEST(ChangePointTest, ARiseIsFoundTooAndShortSeriesAreNot) {
  const ChangePoint up = findChangePoint(series(20, 8, 3, 0.05, 0, 3));
  ASSERT_TRUE(up.found);
  EXPECT_GT(up.after, up.before);
  EXPECT_FALSE(findChangePoint(series(5, 3, 0.01, 0.05, 0, 3)).found);  // < 2 x min_segment
  EXPECT_FALSE(findChangePoint({}).found);
}

TEST(ChangePointTest, SamplesWithoutAValueAreSkipped) {
  std::vector<SeriesPoint> s = series(30, 15, 0.1, 0.05, 0, 4);
  s[3].value = 0;
  s[20].value = std::nan("");
  const ChangePoint cp = findChangePoint(s);
  ASSERT_TRUE(cp.found);
  EXPECT_DOUBLE_EQ(cp.t_s, 30.0);
}

TEST(ChangePointTest, ADaySoakAtOneSecondTakesUnderASecond) {
  const auto t0 = std::chrono::steady_clock::now();
  const ChangePoint cp = findChangePoint(series(86400, 50000, 0.3, 0.1, 0, 5));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(cp.found);
  EXPECT_NEAR(cp.t_s, 100000, 2 * 87 * 2);  // within a block of 87 samples, 2 s apart
  EXPECT_LT(s, 1.0);
}

}  // namespace
}  // namespace ccscope::burnin
