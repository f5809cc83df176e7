#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "collectives/schedule.h"
#include "schedule_hazards.h"
#include "schedule_sim.h"

namespace ccscope::collectives {
namespace {

using testing::simulate;

class RingScheduleTest : public ::testing::TestWithParam<std::tuple<int, uint64_t, uint64_t>> {};

TEST_P(RingScheduleTest, EveryElementReducedFromEveryRankExactlyOnce) {
  auto [n, count, segment] = GetParam();
  std::vector<Schedule> scheds;
  scheds.reserve(n);
  for (int r = 0; r < n; ++r) scheds.push_back(ringAllreduceSchedule(r, n, count, segment, false));
  auto res = simulate(scheds, count);
  ASSERT_TRUE(res.ok) << res.error;
  const uint64_t all = (n == 64 ? ~0ull : (1ull << n) - 1);
  for (int r = 0; r < n; ++r)
    for (uint64_t i = 0; i < count; ++i)
      ASSERT_EQ(res.output[r][i], all) << "rank " << r << " element " << i;
}

TEST_P(RingScheduleTest, SendsTwiceNMinusOneOverNOfTheBuffer) {
  auto [n, count, segment] = GetParam();
  std::vector<Schedule> scheds;
  scheds.reserve(n);
  for (int r = 0; r < n; ++r) scheds.push_back(ringAllreduceSchedule(r, n, count, segment, false));
  auto res = simulate(scheds, count);
  ASSERT_TRUE(res.ok) << res.error;
  double ideal = 2.0 * (n - 1) / n * static_cast<double>(count);
  for (int r = 0; r < n; ++r)  // chunks differ by at most one element
    EXPECT_LE(std::abs(static_cast<double>(res.elems_sent[r]) - ideal), 2.0) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(RanksCountsSegments, RingScheduleTest,
                         ::testing::Values(std::make_tuple(1, 10, 4), std::make_tuple(2, 0, 4),
                                           std::make_tuple(2, 1, 1), std::make_tuple(3, 2, 1),
                                           std::make_tuple(3, 1000, 7),
                                           std::make_tuple(4, 4096, 64), std::make_tuple(5, 12, 1),
                                           std::make_tuple(6, 37, 5), std::make_tuple(7, 999, 1000),
                                           std::make_tuple(8, 8, 3), std::make_tuple(9, 100, 3),
                                           std::make_tuple(11, 5, 2), std::make_tuple(13, 1234, 17),
                                           std::make_tuple(16, 333, 8), std::make_tuple(17, 16, 1),
                                           std::make_tuple(17, 10007, 100)));

TEST(RingScheduleAvgTest, ScalesEachOwnedSegmentOnce) {
  for (int n : {1, 2, 3, 5}) {
    uint64_t scaled = 0;
    for (int r = 0; r < n; ++r)
      for (const Op& o : ringAllreduceSchedule(r, n, 101, 7, true).ops)
        if (o.kind == OpKind::kScale) scaled += o.count;
    EXPECT_EQ(scaled, n == 1 ? 0u : 101u) << n << " ranks";
  }
}

TEST(BarrierScheduleTest, CompletesForAnyRankCount) {
  for (int n = 1; n <= 17; ++n) {
    std::vector<Schedule> scheds;
    scheds.reserve(n);
    for (int r = 0; r < n; ++r) scheds.push_back(barrierSchedule(r, n));
    auto res = simulate(scheds, 0);
    ASSERT_TRUE(res.ok) << n << " ranks: " << res.error;
    EXPECT_EQ(scheds[0].ops.size(),
              n == 1 ? 0u : 2u * static_cast<size_t>(std::ceil(std::log2(n))));
  }
}

TEST(ScheduleSimulatorTest, CatchesADoubleCountedContribution) {
  // A broken schedule: both ranks send their input and reduce it twice.
  std::vector<Schedule> scheds(2);
  for (int r = 0; r < 2; ++r) {
    Schedule& s = scheds[r];
    s.ranks = 2;
    s.scratch_elems = 4;
    uint32_t send = testing::appendOp(
        s, Op{.kind = OpKind::kSend, .peer = 1 - r, .a = {Buf::kInput, 0}, .count = 4});
    uint32_t recv = testing::appendOp(
        s, Op{.kind = OpKind::kRecv, .peer = 1 - r, .dst = {Buf::kScratch, 0}, .count = 4});
    uint32_t red = testing::appendOp(s,
                                     Op{.kind = OpKind::kReduce,
                                        .dst = {Buf::kOutput, 0},
                                        .a = {Buf::kInput, 0},
                                        .b = {Buf::kScratch, 0},
                                        .count = 4},
                                     {send, recv});
    testing::appendOp(s,
                      Op{.kind = OpKind::kReduce,
                         .dst = {Buf::kOutput, 0},
                         .a = {Buf::kOutput, 0},
                         .b = {Buf::kScratch, 0},
                         .count = 4},
                      {red});
    s.finalize();
  }
  EXPECT_FALSE(simulate(scheds, 4).ok);
}

}  // namespace
}  // namespace ccscope::collectives
