// The one way to write a schedule: the segmenter's empty-range rule, the builder's zero-length
// rule and derived hazards, and, for every registered algorithm, that both ends of every pair
// agree on the messages they exchange when counts are empty or tiny.
#include "collectives/schedule_builder.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/algorithms.h"
#include "schedule_hazards.h"

namespace ccscope::collectives {
namespace {

std::vector<uint32_t> depsOf(const Schedule& s, uint32_t op) {
  const Op& o = s.ops[op];
  return {s.deps.begin() + o.dep_begin, s.deps.begin() + o.dep_begin + o.dep_count};
}

TEST(SegmentsTest, AnEmptyRangeHasNoSegments) {
  EXPECT_EQ(Segments(0, 4).count(), 0u);
  EXPECT_EQ(Segments(0, 0).count(), 0u);
  int calls = 0;
  Segments(0, 4).forEach(10, [&](uint64_t, uint64_t, uint64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(SegmentsTest, CutsIntoFullSegmentsAndOneRemainder) {
  const Segments s(9, 4);
  ASSERT_EQ(s.count(), 3u);
  std::vector<std::tuple<uint64_t, uint64_t, uint64_t>> seen;
  s.forEach(100, [&](uint64_t g, uint64_t off, uint64_t len) { seen.emplace_back(g, off, len); });
  using T = std::tuple<uint64_t, uint64_t, uint64_t>;
  EXPECT_EQ(seen, (std::vector<T>{{0, 100, 4}, {1, 104, 4}, {2, 108, 1}}));
  EXPECT_EQ(s.size(7), 0u);  // past the end: empty, never out of range
  EXPECT_EQ(Segments(1, 1u << 30).count(), 1u);
  EXPECT_EQ(Segments(3, 0).count(), 3u);  // a zero segment counts as one element
  EXPECT_EQ(Segments(UINT64_MAX, UINT64_MAX).count(), 1u);
}

TEST(ScheduleBuilderTest, ZeroLengthOpsAreNotEmittedButSignalsAre) {
  ScheduleBuilder b({.ranks = 2, .count = 0});
  EXPECT_EQ(b.send(1, 0, atIn(0), 0), kNoOp);
  EXPECT_EQ(b.recv(1, 0, atOut(0), 0), kNoOp);
  EXPECT_EQ(b.copy(atOut(0), atIn(0), 0), kNoOp);
  EXPECT_EQ(b.reduce(atOut(0), atIn(0), atScratch(0), 0), kNoOp);
  EXPECT_EQ(b.scale(atOut(0), 0), kNoOp);
  const uint32_t s = b.sendSignal(1, 0, {kNoOp});
  b.recvSignal(1, 0, {s});
  const Schedule sched = b.finish();
  ASSERT_EQ(sched.ops.size(), 2u);
  EXPECT_EQ(sched.ops[0].count, 0u);
  EXPECT_EQ(depsOf(sched, 1), std::vector<uint32_t>{0});
}

TEST(ScheduleBuilderTest, DerivesReadAfterWriteWriteAfterReadAndWriteAfterWrite) {
  ScheduleBuilder b({.ranks = 2, .count = 8});
  b.setScratch(8);
  const uint32_t rcv = b.recv(1, 0, atScratch(0), 4);
  const uint32_t red = b.reduce(atOut(0), atIn(0), atScratch(2), 4);  // overlaps [2, 4)
  const uint32_t rcv2 = b.recv(1, 1, atScratch(3), 2);                // after red read [3, 4)
  const uint32_t snd = b.send(1, 2, atOut(4), 4);                     // Output [4, 8): nothing
  const uint32_t paced = b.send(1, 3, atOut(6), 1, {snd});
  const Schedule s = b.finish();
  EXPECT_EQ(depsOf(s, red), std::vector<uint32_t>{rcv});
  EXPECT_EQ(depsOf(s, rcv2), (std::vector<uint32_t>{rcv, red}));
  EXPECT_TRUE(depsOf(s, snd).empty());
  EXPECT_EQ(depsOf(s, paced), std::vector<uint32_t>{snd});
}

TEST(ScheduleBuilderTest, OrdersAccessesThatOnlyMeetInPlace) {
  // Reduce-scatter of 12 over 3 ranks, rank 1: in place the output is input block 1.
  ScheduleBuilder b({.collective = Collective::kReduceScatter, .rank = 1, .ranks = 3, .count = 12});
  const uint32_t snd = b.send(2, 0, atIn(4), 4);
  const uint32_t rcv = b.recv(2, 1, atOut(0), 4);
  const uint32_t apart = b.recv(2, 2, atOut(0), 0);
  const Schedule s = b.finish();
  EXPECT_EQ(depsOf(s, rcv), std::vector<uint32_t>{snd});
  EXPECT_EQ(apart, kNoOp);
  // An all-to-all never runs in place: its input and output never meet.
  ScheduleBuilder a({.collective = Collective::kAlltoall, .rank = 0, .ranks = 2, .count = 4});
  a.send(1, 0, atIn(0), 2);
  const uint32_t land = a.recv(1, 0, atOut(0), 2);
  EXPECT_TRUE(depsOf(a.finish(), land).empty());
}

TEST(ScheduleBuilderTest, ACopyOntoItselfInPlaceTouchesNothingThere) {
  // Allgather rank 1 of 2: in place the input is output block 1, so this copy is skipped there;
  // out of place it only reads the input, which the send reads too.
  ScheduleBuilder b({.collective = Collective::kAllgather, .rank = 1, .ranks = 2, .count = 8});
  b.copy(atOut(4), atIn(0), 4);
  const uint32_t snd = b.send(0, 0, atIn(0), 4);
  const uint32_t rcv = b.recv(0, 0, atOut(0), 4);
  const Schedule s = b.finish();
  EXPECT_TRUE(depsOf(s, snd).empty());
  EXPECT_TRUE(depsOf(s, rcv).empty());
}

// Per (rank, peer, direction): the tags and lengths of the messages, in schedule order.
using Lanes = std::map<std::tuple<int, int, bool>, std::vector<std::pair<uint32_t, uint64_t>>>;

Lanes lanesOf(const std::vector<Schedule>& scheds) {
  Lanes lanes;
  for (const Schedule& s : scheds)
    for (const Op& o : s.ops)
      if (o.kind == OpKind::kSend || o.kind == OpKind::kRecv)
        lanes[{s.rank, o.peer, o.kind == OpKind::kRecv}].emplace_back(o.tag, o.count);
  return lanes;
}

// Both ends see the same messages in the same order, and none is an empty data message.
std::string pairsAgree(const std::vector<Schedule>& scheds) {
  if (std::string e = testing::laneMismatch(scheds); !e.empty()) return e;
  const Lanes lanes = lanesOf(scheds);
  for (const auto& [key, msgs] : lanes) {
    const auto [r, peer, is_recv] = key;
    if (msgs != lanes.at({peer, r, !is_recv}))
      return "ranks " + std::to_string(r) + " and " + std::to_string(peer) +
             " disagree on the tags or lengths of their messages";
    for (const auto& m : msgs)
      if (m.second == 0) return "rank " + std::to_string(r) + " has an empty data message";
  }
  return "";
}

AlltoallvPlan sparsePlan(int n, uint64_t count) {
  AlltoallvPlan plan{n, {}};
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) plan.matrix.push_back((s + 2 * d) % 3 == 0 ? 0 : count % 3);
  return plan;
}

class ScheduleBuilderPairsTest : public ::testing::TestWithParam<int> {};

TEST_P(ScheduleBuilderPairsTest, EveryAlgorithmsPairsAgreeOnEmptyAndTinyCounts) {
  const int n = GetParam();
  for (const AlgorithmInfo& a : allAlgorithms())
    for (uint64_t raw : {uint64_t{0}, uint64_t{1}, static_cast<uint64_t>(n - 1)})
      for (uint64_t segment : {uint64_t{1}, uint64_t{2}, uint64_t{1} << 20}) {
        const uint64_t count = roundCount(a.collective, raw, n);
        const AlltoallvPlan plan = sparsePlan(n, raw);
        std::vector<Schedule> scheds;
        scheds.reserve(n);
        for (int r = 0; r < n; ++r)
          scheds.push_back(a.build(
              {a.collective, r, n, count, segment, false, static_cast<int>(raw) % n, &plan}));
        EXPECT_EQ(pairsAgree(scheds), "")
            << collectiveName(a.collective) << "/" << a.name << " n=" << n << " count=" << count
            << " segment=" << segment;
      }
}

TEST_P(ScheduleBuilderPairsTest, TheBarrierSendsOnlyZeroByteMessagesThatPair) {
  const int n = GetParam();
  std::vector<Schedule> scheds;
  scheds.reserve(n);
  for (int r = 0; r < n; ++r) scheds.push_back(barrierSchedule(r, n));
  EXPECT_EQ(testing::laneMismatch(scheds), "");
  for (const Schedule& s : scheds)
    for (const Op& o : s.ops) EXPECT_EQ(o.count, 0u);
}

INSTANTIATE_TEST_SUITE_P(Ranks1To9, ScheduleBuilderPairsTest, ::testing::Range(1, 10));

}  // namespace
}  // namespace ccscope::collectives
