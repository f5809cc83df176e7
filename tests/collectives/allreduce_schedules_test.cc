// Recursive doubling, Rabenseifner and double binary tree allreduce, proven without a transport:
// every output element on every rank holds every rank's contribution exactly once, bytes sent
// per rank follow each algorithm's formula, and (lineage_sim.h) no op races with a transfer in
// flight, in place or not, avg scales each final sum exactly once, and nothing deadlocks when a
// send completes only once its receive is posted.
#include "collectives/allreduce_schedules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "collectives/power_of_two_fold.h"
#include "lineage_sim.h"
#include "schedule_hazards.h"
#include "schedule_sim.h"

namespace ccscope::collectives {
namespace {

using Builder = Schedule (*)(int, int, uint64_t, uint64_t, bool);

struct Algorithm {
  const char* name;
  Builder build;
  // Elements rank r of n sends for `count` elements.
  double (*sent)(int r, int n, uint64_t count);
};

// log2(p) whole buffers; S more for both sides of the fold.
double recursiveDoublingSent(int r, int n, uint64_t count) {
  const PowerOfTwoFold f(n);
  if (f.extra(r)) return static_cast<double>(count);
  return static_cast<double>(count) * (f.rounds + (f.foldPartner(r) >= 0 ? 1 : 0));
}

// Reduce-scatter sends all but the rank's own block (of p); allgather sends the 2^j blocks it
// holds at step j: 2(p-1)/p of the buffer when p divides it. S more for both sides of the fold.
double rabenseifnerSent(int r, int n, uint64_t count) {
  const PowerOfTwoFold f(n);
  if (f.extra(r)) return static_cast<double>(count);
  const int me = f.newRank(r);
  auto blocks = [&](int lo, int len) {
    return partOffset(count, f.pof2, lo + len) - partOffset(count, f.pof2, lo);
  };
  uint64_t sent = count - blocks(me, 1);
  for (int len = 1; len < f.pof2; len *= 2) sent += blocks(me & ~(len - 1), len);
  return static_cast<double>(sent + (f.foldPartner(r) >= 0 ? count : 0));
}

// Half t up once unless r is its root, and down once per child.
double treeSent(int r, int n, uint64_t count) {
  const auto trees = doubleBinaryTree(r, n);
  const uint64_t mid = partOffset(count, 2, 1), half[2] = {mid, count - mid};
  double sent = 0;
  for (int t = 0; t < 2; ++t)
    sent += static_cast<double>(half[t]) * ((trees[t].parent >= 0) + trees[t].childCount());
  return n == 1 ? 0.0 : sent;
}

const Algorithm kAlgorithms[] = {
    {"recursive_doubling", recursiveDoublingAllreduceSchedule, recursiveDoublingSent},
    {"rabenseifner", rabenseifnerAllreduceSchedule, rabenseifnerSent},
    {"tree", treeAllreduceSchedule, treeSent},
};

std::vector<Schedule> buildAll(const Algorithm& a, int n, uint64_t count, uint64_t seg, bool avg) {
  std::vector<Schedule> s;
  s.reserve(n);
  for (int r = 0; r < n; ++r) s.push_back(a.build(r, n, count, seg, avg));
  return s;
}

uint64_t allRanks(int n) { return n == 64 ? ~0ull : (1ull << n) - 1; }

class AllreduceScheduleTest : public ::testing::TestWithParam<std::tuple<int, int>> {
 protected:
  const Algorithm& algo() const { return kAlgorithms[std::get<0>(GetParam())]; }
  int ranks() const { return std::get<1>(GetParam()); }
  // Element counts that stress the partitioning: empty, fewer than the ranks, primes.
  std::vector<uint64_t> counts() const {
    const uint64_t n = static_cast<uint64_t>(ranks());
    return {0, 1, 2, n - 1, n, n + 1, 7, 97};
  }
};

TEST_P(AllreduceScheduleTest, EveryElementSumsEveryRankExactlyOnce) {
  const int n = ranks();
  for (uint64_t count : counts())
    for (uint64_t seg : {uint64_t{1}, uint64_t{3}, uint64_t{1} << 30}) {
      SCOPED_TRACE(std::string(algo().name) + " count " + std::to_string(count) + " segment " +
                   std::to_string(seg));
      auto res = testing::simulate(buildAll(algo(), n, count, seg, false), count);
      ASSERT_TRUE(res.ok) << res.error;
      for (int r = 0; r < n; ++r)
        for (uint64_t i = 0; i < count; ++i)
          ASSERT_EQ(res.output[r][i], allRanks(n)) << "rank " << r << " element " << i;
    }
}

TEST_P(AllreduceScheduleTest, SendsWhatItsFormulaSays) {
  const int n = ranks();
  for (uint64_t count : {uint64_t{0}, uint64_t{1}, uint64_t(n + 1), uint64_t{10007}})
    for (uint64_t seg : {uint64_t{64}, uint64_t{1000}, uint64_t{1} << 30}) {
      SCOPED_TRACE(std::string(algo().name) + " count " + std::to_string(count) + " segment " +
                   std::to_string(seg));
      auto res = testing::simulate(buildAll(algo(), n, count, seg, false), count);
      ASSERT_TRUE(res.ok) << res.error;
      for (int r = 0; r < n; ++r)
        EXPECT_EQ(static_cast<double>(res.elems_sent[r]), algo().sent(r, n, count)) << "rank " << r;
    }
}

TEST_P(AllreduceScheduleTest, RaceFreeInPlaceAndOutOfPlaceAndAvgScalesOnce) {
  const int n = ranks();
  for (uint64_t count : {uint64_t{0}, uint64_t{1}, uint64_t(n + 1), uint64_t{37}})
    for (uint64_t seg : {uint64_t{1}, uint64_t{4}, uint64_t{1} << 30})
      for (int mode = 0; mode < 8; ++mode) {
        const testing::LineageOptions o{.in_place = (mode & 1) != 0,
                                        .avg = (mode & 2) != 0,
                                        .rendezvous = (mode & 4) == 0,
                                        .seed = count * 31 + seg};
        SCOPED_TRACE(std::string(algo().name) + " count " + std::to_string(count) + " segment " +
                     std::to_string(seg) + " mode " + std::to_string(mode));
        auto scheds = buildAll(algo(), n, count, seg, o.avg);
        EXPECT_EQ(testing::LineageSim(scheds, count, o).run(), "");
      }
}

std::string params(const ::testing::TestParamInfo<std::tuple<int, int>>& p) {
  return std::string(kAlgorithms[std::get<0>(p.param)].name) + "_" +
         std::to_string(std::get<1>(p.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(Ranks1To17, AllreduceScheduleTest,
                         ::testing::Combine(::testing::Range(0, 3), ::testing::Range(1, 18)),
                         params);

TEST(AllreduceScheduleSizeTest, PowersOfTwoMatchTheClassicFormulas) {
  // Rabenseifner 2(n-1)/n S (block rounding only), recursive doubling log2(n) S, tree <= 2S.
  const uint64_t count = 1 << 12;  // divisible by every n here: no rounding
  for (int n : {2, 4, 8, 16}) {
    auto rab = testing::simulate(buildAll(kAlgorithms[1], n, count, 100, false), count);
    auto rd = testing::simulate(buildAll(kAlgorithms[0], n, count, 100, false), count);
    ASSERT_TRUE(rab.ok && rd.ok);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(rab.elems_sent[r], uint64_t{2} * (n - 1) * count / n) << n << " ranks, rank " << r;
      EXPECT_EQ(rd.elems_sent[r], static_cast<uint64_t>(std::log2(n)) * count);
    }
  }
}

TEST(AllreduceScheduleSizeTest, TreeSendsAtMostTwiceTheBufferAndTwoNMinusOneInTotal) {
  const uint64_t count = 1001;
  for (int n = 2; n <= 17; ++n) {
    auto res = testing::simulate(buildAll(kAlgorithms[2], n, count, 50, false), count);
    ASSERT_TRUE(res.ok) << res.error;
    uint64_t total = 0;
    for (int r = 0; r < n; ++r) {
      EXPECT_LE(res.elems_sent[r], 2 * count + 1) << n << " ranks, rank " << r;
      total += res.elems_sent[r];
    }
    // Each tree has n-1 edges, each carrying its half up once and down once.
    EXPECT_EQ(total, 2 * static_cast<uint64_t>(n - 1) * count) << n << " ranks";
  }
}

TEST(DoubleBinaryTreeTest, BothTreesSpanEveryRankAndLeavesSwapRoles) {
  for (int n = 1; n <= 17; ++n)
    for (int t = 0; t < 2; ++t) {
      SCOPED_TRACE(std::to_string(n) + " ranks, tree " + std::to_string(t));
      int roots = 0, reached = 0;
      std::vector<int> todo;
      for (int r = 0; r < n; ++r) {
        const TreeLinks l = doubleBinaryTree(r, n)[t];
        if (l.parent < 0) ++roots, todo.push_back(r);
        for (int c : l.children)
          if (c >= 0) {
            EXPECT_EQ(doubleBinaryTree(c, n)[t].parent, r) << "child " << c << " of " << r;
          }
      }
      ASSERT_EQ(roots, 1);
      while (!todo.empty()) {
        const TreeLinks l = doubleBinaryTree(todo.back(), n)[t];
        todo.pop_back();
        ++reached;
        for (int c : l.children)
          if (c >= 0) todo.push_back(c);
      }
      EXPECT_EQ(reached, n);
    }
  for (int n = 2; n <= 17; ++n)
    for (int r = n % 2; r < n; ++r) {  // odd n: rank 0 is tree 0's one-child root, interior in both
      const auto trees = doubleBinaryTree(r, n);
      EXPECT_NE(trees[0].childCount() == 0, trees[1].childCount() == 0)
          << n << " ranks, rank " << r;
    }
}

TEST(DoubleBinaryTreeTest, MatchesNcclsTrees) {
  // The pictures in NCCL's src/graph/trees.cc.
  EXPECT_EQ(doubleBinaryTree(0, 14)[0].children[1], 8);
  EXPECT_EQ(doubleBinaryTree(12, 14)[0].children, (std::array<int, 2>{10, 13}));
  EXPECT_EQ(doubleBinaryTree(11, 12)[1].parent, -1);  // mirror: 0-8 becomes 11-3
  EXPECT_EQ(doubleBinaryTree(11, 12)[1].children[1], 3);
  EXPECT_EQ(doubleBinaryTree(1, 13)[1].parent, -1);  // shift: 0-8 becomes 1-9
  EXPECT_EQ(doubleBinaryTree(9, 13)[1].children, (std::array<int, 2>{5, 0}));
}

// A check that cannot fail proves nothing: break each schedule and watch the checks catch it.
TEST(AllreduceScheduleCheckTest, CatchesBrokenSchedules) {
  const int n = 5;
  const uint64_t count = 13, seg = 4;
  for (const Algorithm& a : kAlgorithms) {
    SCOPED_TRACE(a.name);
    auto firstReduce = [](const Schedule& s) {
      for (uint32_t i = 0; i < s.ops.size(); ++i)
        if (s.ops[i].kind == OpKind::kReduce) return i;
      return UINT32_MAX;
    };
    // 1. A reduction that no longer waits for its operand: a race or a missing contribution.
    auto racy = buildAll(a, n, count, seg, false);
    const int victim = n - 1;  // never an extra rank of the fold
    uint32_t op = firstReduce(racy[victim]);
    ASSERT_NE(op, UINT32_MAX);
    racy[victim].ops[op].dep_count = 0;
    racy[victim].finalize();
    bool caught = false;
    for (uint64_t seed = 1; seed <= 20 && !caught; ++seed)
      caught = !testing::LineageSim(racy, count, {.seed = seed}).run().empty();
    EXPECT_TRUE(caught) << "a reduction ignoring its dependencies went unnoticed";
    // 2. A reduction that drops its second operand: a contribution goes missing.
    auto lossy = buildAll(a, n, count, seg, false);
    lossy[victim].ops[op].kind = OpKind::kCopy;
    // Judged on every rank's whole output: the dropped operand may sit in scratch, and the
    // rank that misses the contribution need not be rank 0.
    auto res = testing::simulate(lossy, count);
    bool wrong = !res.ok;
    for (const auto& out : res.output)
      wrong = wrong ||
              std::any_of(out.begin(), out.end(), [&](uint64_t v) { return v != allRanks(n); });
    EXPECT_TRUE(wrong) << "a reduction dropping an operand went unnoticed";
    // 3. avg scaled twice on one rank.
    auto twice = buildAll(a, n, count, seg, true);
    testing::appendOp(twice[0],
                      Op{.kind = OpKind::kScale, .dst = {Buf::kOutput, 0}, .count = count},
                      {static_cast<uint32_t>(twice[0].ops.size() - 1)});
    twice[0].finalize();
    EXPECT_NE(testing::LineageSim(twice, count, {.avg = true}).run(), "");
    // 4. avg never scaled.
    EXPECT_NE(testing::LineageSim(buildAll(a, n, count, seg, false), count, {.avg = true}).run(),
              "");
  }
}

}  // namespace
}  // namespace ccscope::collectives
