#include "model/predict.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "model/tail.h"

namespace ccscope::model {
namespace {

// The schedule replay and the registry formula describe one algorithm: where both apply they
// agree (the switch between them at kScheduleRanks is no cliff).
TEST(PredictTest, ScheduleAndFormulaAgreeOnAFlatTopology) {
  Topology t;
  t.ranks_per_host = 1 << 20;
  t.intra = {10e-6, 5e9};
  t.gamma = 1 / 8e9;
  for (const char* algo : {"ring", "tree"})
    for (int n : {4, 16, 64})
      for (uint64_t b : {uint64_t{1} << 20, uint64_t{16} << 20, uint64_t{256} << 20}) {
        auto sched = predict(t, "allreduce", algo, n, b, Method::kSchedule);
        auto formula = predict(t, "allreduce", algo, n, b, Method::kFormula);
        ASSERT_TRUE(sched.isOk() && formula.isOk()) << sched.status().toString();
        // The formula counts the tree's steady state as four segments per tick through a
        // rank's port; the replay finds the pipeline's fill and drain as well.
        EXPECT_NEAR(formula->seconds / sched->seconds, 1, 0.25) << algo << " np" << n << " " << b;
      }
}

// The same on a fitted topology of one oversubscribed machine whose buffers outgrow the cache:
// the formula's CPU share and cache term stand for the replay's core-bound time and misses.
TEST(PredictTest, ScheduleAndFormulaAgreeOnAnOversubscribedMachineBeyondItsCache) {
  Params p;
  p.alpha = {5e-6, 20e-6};
  p.beta = {1 / 4e9, 1 / 1e9};
  p.gamma = 1 / 6e9;
  p.delta = 1 / 3e9;
  const Topology t = fromParams(p, 1, 2, true, 64 << 10, 8 << 20);
  for (const char* algo : {"ring", "tree"})
    for (int n : {16, 64})
      for (uint64_t b : {uint64_t{1} << 20, uint64_t{16} << 20, uint64_t{256} << 20}) {
        auto sched = predict(t, "allreduce", algo, n, b, Method::kSchedule);
        auto formula = predict(t, "allreduce", algo, n, b, Method::kFormula);
        ASSERT_TRUE(sched.isOk() && formula.isOk()) << sched.status().toString();
        // The ring's work is its formula's; the tree's formula is a pipeline's critical path,
        // not the sum of what each rank moves (seen: 0.98-1.26 of the replay).
        const double within = std::string(algo) == "ring" ? 0.1 : 0.3;
        EXPECT_NEAR(formula->seconds / sched->seconds, 1, within) << algo << " np" << n << " " << b;
      }
}

TEST(PredictTest, PresetMatchesThePublishedSingleNodeNvlsFigure) {
  auto t = preset("h200-nvswitch-ndr");
  ASSERT_TRUE(t.isOk());
  auto p = predict(*t, "allreduce", "nvls", 8, uint64_t{8} << 30);
  ASSERT_TRUE(p.isOk());
  // nccl-tests on 8 x H200 with NVLS: ~475-480 GB/s busbw at 8 GiB (docs/model.md).
  EXPECT_NEAR(p->busbw_gbps / 477.0, 1, 0.10) << p->busbw_gbps;
  auto ring = predict(*t, "allreduce", "ring", 8, uint64_t{8} << 30);
  ASSERT_TRUE(ring.isOk());
  EXPECT_NEAR(ring->busbw_gbps / 370.0, 1, 0.10) << ring->busbw_gbps;
  EXPECT_GT(p->busbw_gbps, ring->busbw_gbps);
}

TEST(PredictTest, HundredThousandRanksTwentySizesFourAlgorithmsUnderTwoSeconds) {
  auto t = preset("h100-nvswitch-ndr");
  ASSERT_TRUE(t.isOk());
  auto start = std::chrono::steady_clock::now();
  int n = 0;
  for (const char* algo : {"ring", "tree", "hierarchical", "nvls"})
    for (int s = 0; s < 20; ++s) {
      auto p = predict(*t, "allreduce", algo, 100000, uint64_t{1} << (s + 10));
      ASSERT_TRUE(p.isOk());
      EXPECT_GT(p->busbw_gbps, 0);
      ++n;
    }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(n, 80);
  EXPECT_LT(secs, 2.0);
}

TEST(PredictTest, AlltoallAcrossHostsIsBoundByOneNicPerRank) {
  auto t = preset("h100-nvswitch-ndr");
  ASSERT_TRUE(t.isOk());
  auto p = predict(*t, "alltoall", "pairwise", 64, uint64_t{2} << 30);
  ASSERT_TRUE(p.isOk());
  EXPECT_LT(p->busbw_gbps, 60);
  EXPECT_GT(p->busbw_gbps, 40);
}

TEST(PredictTest, BadInputIsAnErrorNotANumber) {
  auto t = preset("h100-nvswitch-ndr");
  ASSERT_TRUE(t.isOk());
  EXPECT_FALSE(predict(*t, "allreduce", "nosuch", 8, 1 << 20).isOk());
  EXPECT_FALSE(predict(*t, "broadcast", "ring", 8, 1 << 20).isOk());
  EXPECT_FALSE(predict(*t, "allreduce", "ring", 0, 1 << 20).isOk());
  EXPECT_FALSE(preset("nosuch").isOk());
}

TEST(TailTest, OneSlowLinkSetsEveryStep) {
  LinkTail good{10e-6, 20e-6, 1e9, 7}, slow{10e-6, 20e-6, 1e8, 1};
  auto healthy = predictTail(ringAllreduceTail({{10e-6, 20e-6, 1e9, 8}}, 8, 8e6));
  auto throttled = predictTail(ringAllreduceTail({good, slow}, 8, 8e6));
  ASSERT_TRUE(healthy.isOk() && throttled.isOk());
  // 14 steps of 1 MB: ~1 ms each on the slow link, ~0.1 ms on the others.
  EXPECT_NEAR(throttled->p50_s, 14 * (1e-2 + 12e-6), 14 * 2e-3);
  EXPECT_NEAR(healthy->p50_s, 14 * (1e-3 + 15e-6), 14 * 2e-4);
}

TEST(TailTest, ARareBadLinkStretchesTheMedianAtScale) {
  auto base = predictTail(ringAllreduceTail({{5e-6, 15e-6, 0, 16384}}, 16384, 8192));
  auto bad = predictTail(ringAllreduceTail(
      {{5e-6, 15e-6, 0, 16384 * 0.999}, {5e-6, 45e-6, 0, 16384 * 0.001}}, 16384, 8192));
  ASSERT_TRUE(base.isOk() && bad.isOk());
  EXPECT_EQ(base->method, "normal");
  EXPECT_GT(bad->p50_s, base->p50_s * 1.05);
  EXPECT_GT(bad->p99_s, bad->p50_s);
}

TEST(TailTest, MonteCarloAndTheNormalApproximationAgreeWhereBothApply) {
  TailQuery q = ringAllreduceTail({{5e-6, 15e-6, 0, 64}}, 64, 4096);
  auto mc = predictTail(q);
  q.trials = 1000000;  // too many draws: the normal approximation
  auto normal = predictTail(q);
  ASSERT_TRUE(mc.isOk() && normal.isOk());
  EXPECT_EQ(mc->method, "monte-carlo");
  EXPECT_EQ(normal->method, "normal");
  EXPECT_NEAR(normal->p50_s / mc->p50_s, 1, 0.03);
  EXPECT_NEAR(normal->p99_s / mc->p99_s, 1, 0.05);
}

}  // namespace
}  // namespace ccscope::model
