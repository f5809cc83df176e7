#include "core/deadline.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>

namespace ccscope::core {
namespace {

constexpr int64_t kHourNs = 3600LL * 1'000'000'000;

TEST(DeadlineTest, DurationsPastInt64NanosecondsMeanNever) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double s : {1e30, 1e10, 9.3e9, inf, std::numeric_limits<double>::max()}) {
    Deadline d = Deadline::afterSeconds(s);
    EXPECT_TRUE(d.isNever()) << s;
    EXPECT_FALSE(d.expired()) << s;
  }
  EXPECT_TRUE(Deadline::after(std::chrono::nanoseconds::max()).isNever());
  // Fits in int64 nanoseconds alone, not once added to now.
  EXPECT_TRUE(Deadline::after(std::chrono::nanoseconds(INT64_MAX - 1)).isNever());
}

TEST(DeadlineTest, LongButRepresentableDurationsAreKept) {
  Deadline d = Deadline::afterSeconds(3600);
  EXPECT_FALSE(d.isNever());
  EXPECT_FALSE(d.expired());
  EXPECT_GT(d.remainingNs(), kHourNs - kHourNs / 100);
  EXPECT_LE(d.remainingNs(), kHourNs);
  EXPECT_FALSE(Deadline::afterSeconds(1e8).isNever());
  EXPECT_FALSE(Deadline::afterSeconds(1e8).expired());
}

TEST(DeadlineTest, NegativeZeroAndNanSecondsAreAlreadyExpired) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double s : {-1.0, -1e30, -inf, 0.0, nan}) {
    Deadline d = Deadline::afterSeconds(s);
    EXPECT_TRUE(d.expired()) << s;
    EXPECT_FALSE(d.isNever()) << s;
    EXPECT_EQ(d.remainingNs(), 0) << s;
  }
  EXPECT_TRUE(Deadline::after(std::chrono::nanoseconds::min()).expired());
  EXPECT_TRUE(Deadline::after(std::chrono::seconds(-5)).expired());
}

TEST(DeadlineTest, SecondsToNsSaturates) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(secondsToNs(1.5), 1'500'000'000);
  EXPECT_EQ(secondsToNs(1e30), INT64_MAX);
  EXPECT_EQ(secondsToNs(inf), INT64_MAX);
  EXPECT_EQ(secondsToNs(9.3e9), INT64_MAX);
  EXPECT_EQ(secondsToNs(-1), 0);
  EXPECT_EQ(secondsToNs(-inf), 0);
  EXPECT_EQ(secondsToNs(std::numeric_limits<double>::quiet_NaN()), 0);
}

TEST(DeadlineTest, NeverClampsPollTimeoutsToTheCap) {
  EXPECT_EQ(Deadline::never().remainingMsClamped(500), 500);
  EXPECT_EQ(Deadline::afterSeconds(1e30).remainingMsClamped(250), 250);
  EXPECT_EQ(Deadline::afterSeconds(-1).remainingMsClamped(250), 0);
}

}  // namespace
}  // namespace ccscope::core
