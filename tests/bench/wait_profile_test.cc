#include "bench/wait_profile.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace ccscope::bench {
namespace {

// A ring of n ranks in which every rank waits on its left neighbour for `blocked` of `samples`
// samples, except `slow`, which is blocked only `slow_blocked` times.
WaitProfile ring(int n, int64_t samples, int64_t blocked, int slow = -1, int64_t slow_blocked = 0) {
  WaitProfile p(n);
  for (int a = 0; a < n; ++a) {
    p.running[a] = samples;
    p.waited_on[a][(a + n - 1) % n] = a == slow ? slow_blocked : blocked;
  }
  if (slow >= 0) {  // the rank after the straggler, and the one before it (its sends), wait on it
    p.waited_on[(slow + 1) % n][slow] = blocked;
    p.waited_on[(slow + n - 1) % n][(slow + n - 2) % n] = blocked / 2;
    p.waited_on[(slow + n - 1) % n][slow] = blocked / 2;
  }
  return p;
}

TEST(WaitProfileTest, FlattenRoundTrips) {
  WaitProfile p = ring(4, 100, 60, 2, 5);
  WaitProfile q = WaitProfile::unflatten(4, p.flatten());
  EXPECT_EQ(q.running, p.running);
  EXPECT_EQ(q.waited_on, p.waited_on);
  EXPECT_EQ(p.flatten().size(), 4u * 5u);
}

TEST(WaitProfileTest, BalancedRingHasNoStraggler) {
  for (int n : {2, 3, 4, 8}) {
    StragglerVerdict v = findStraggler(ring(n, 200, 120));
    EXPECT_EQ(v.rank, -1) << n;
    EXPECT_TRUE(v.text.empty());
    ASSERT_EQ(v.blocked_share.size(), static_cast<size_t>(n));
    EXPECT_DOUBLE_EQ(v.blocked_share[0], 0.6);
  }
}

TEST(WaitProfileTest, TheRankOthersWaitOnWhileItWorksIsNamed) {
  for (int n : {2, 3, 4, 8})
    for (int slow = 0; slow < n; ++slow) {
      StragglerVerdict v = findStraggler(ring(n, 200, 150, slow, 10));
      EXPECT_EQ(v.rank, slow) << n << " ranks, slow " << slow;
      EXPECT_NE(v.text.find("rank " + std::to_string(slow)), std::string::npos) << v.text;
    }
}

TEST(WaitProfileTest, ARankWithMissingSamplesWasTheSlowOne) {
  // Stopped half the time: half the samples, and while it runs it waits as much as the others.
  WaitProfile p = ring(3, 400, 360, 1, 0);
  p.running[1] = 200;
  p.waited_on[1][0] = 180;
  StragglerVerdict v = findStraggler(p);
  EXPECT_EQ(v.rank, 1) << v.text;
  EXPECT_DOUBLE_EQ(v.blocked_share[1], 0.45);
}

TEST(WaitProfileTest, AStoppedRankWhoseNeighbourCollectsTheWaitsIsStillNamed) {
  // mp.straggler.tcp.np4.rank3 once: blocked shares 0.84/0.85/0.78/0.43, rank 3 SIGSTOPped
  // half the time, and no straggler named. Waits pass along the ring: rank 2, whose sends to
  // the stopped rank stall, is waited on more than rank 3 itself.
  WaitProfile p(4);
  p.running = {400, 400, 400, 230};
  p.waited_on[0] = {0, 0, 156, 180};  // 0 on 3 (its left) and on 2
  p.waited_on[1] = {150, 0, 190, 0};  // 1 on 0 (its left) and on 2
  p.waited_on[2] = {0, 150, 0, 160};  // 2 on 1 (its left) and on 3 (its sends stall)
  p.waited_on[3] = {0, 0, 172, 0};    // 3, when it runs, on 2
  StragglerVerdict v = findStraggler(p);
  ASSERT_EQ(v.rank, 3) << v.text;
  EXPECT_NEAR(v.blocked_share[3], 0.43, 0.01);
  EXPECT_GT(v.waited_share[2], v.waited_share[3]);
  // The same blocked shares with nobody waiting on rank 3: not named.
  p.waited_on[0] = {0, 0, 336, 0};
  p.waited_on[2] = {0, 310, 0, 0};
  EXPECT_EQ(findStraggler(p).rank, -1);
}

TEST(WaitProfileTest, NearMissesAreNotStragglers) {
  // Everyone mostly busy (compute-bound): nobody is waited on enough to matter.
  EXPECT_EQ(findStraggler(ring(4, 200, 40, 1, 2)).rank, -1);
  // The slow rank waits more than 0.7 of the median: noise, not a straggler.
  EXPECT_EQ(findStraggler(ring(4, 200, 150, 1, 120)).rank, -1);
  // A sweep too short to say anything.
  EXPECT_EQ(findStraggler(ring(4, kMinSamples - 1, kMinSamples - 5, 1, 0)).rank, -1);
  // One rank.
  EXPECT_EQ(findStraggler(WaitProfile(1)).rank, -1);
}

TEST(WaitProfileTest, JsonRecordCarriesTheMatrixAndTheVerdict) {
  WaitProfile p = ring(3, 200, 150, 2, 10);
  StragglerVerdict v = findStraggler(p);
  nlohmann::json j = toJson(p, v, "ring", {"a", "b", "c"});
  EXPECT_EQ(j["type"], "waits");
  EXPECT_EQ(j["straggler"], 2);
  EXPECT_EQ(j["host"], "c");
  EXPECT_EQ(j["waited_on"][0][2], 150);
  EXPECT_EQ(j["samples"].size(), 3u);
  nlohmann::json none = toJson(ring(3, 200, 150), findStraggler(ring(3, 200, 150)), "ring", {});
  EXPECT_EQ(none["straggler"], -1);
  EXPECT_FALSE(none.contains("verdict"));
}

TEST(WaitSamplerTest, CountsBlockedSamplesOnThePeerTheEntryNames) {
  core::FlightRecorder rec;
  core::FlightEntry& e = rec.begin("allreduce", "ring", "float", 8, 4);
  e.waitingOn(1, 8, 0);
  WaitSampler s(&rec, 0, 2, std::chrono::microseconds(500));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  e.doneWaiting();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  core::FlightRecorder::end(e, true);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  WaitProfile p = s.stop();
  EXPECT_GT(p.waited_on[0][1], 10);
  EXPECT_GT(p.running[0], p.waited_on[0][1]);  // some samples while running but not waiting
  EXPECT_EQ(p.running[1], 0);                  // only this rank's row
  EXPECT_EQ(p.waited_on[0][0], 0);
}

// The harness's barrier and statistics reductions are in the recorder (a hang in them must be
// diagnosable) but they are not measured collectives: a rank waiting there is not profiled.
TEST(WaitSamplerTest, LeavesOutTheHarnessOwnCollectives) {
  for (auto [op, algo] : {std::pair{core::kHarnessBarrier, "dissemination"},
                          std::pair{"allreduce", core::kHarnessReduction}}) {
    core::FlightRecorder rec;
    core::FlightEntry& e = rec.begin(op, algo, "double", 8, 4);
    e.waitingOn(1, 8, 0);
    EXPECT_TRUE(core::isHarnessOperation(e)) << op << " " << algo;
    WaitSampler s(&rec, 0, 2, std::chrono::microseconds(500));
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    WaitProfile p = s.stop();
    EXPECT_EQ(p.running[0], 0) << op << " " << algo;
    EXPECT_EQ(p.waited_on[0][1], 0) << op << " " << algo;
  }
  core::FlightRecorder rec;
  EXPECT_FALSE(core::isHarnessOperation(rec.begin("allreduce", "ring", "double", 8, 4)));
}

}  // namespace
}  // namespace ccscope::bench

namespace ccscope::bench {
namespace {

// One core's worth of samplers: with a core per rank the base period, oversubscribed longer in
// proportion, so 8 ranks on 2 cores wake the cores as often as 2 ranks do.
TEST(SamplePeriodTest, StretchesWithRanksPerCore) {
  unsetenv("CCSCOPE_WAIT_SAMPLE_PERIOD");
  EXPECT_EQ(*samplePeriod(2, 2), kBaseSamplePeriod);
  EXPECT_EQ(*samplePeriod(4, 16), kBaseSamplePeriod);
  EXPECT_EQ(*samplePeriod(3, 2), 2 * kBaseSamplePeriod);
  EXPECT_EQ(*samplePeriod(8, 2), 4 * kBaseSamplePeriod);
  EXPECT_EQ(*samplePeriod(9, 2), 5 * kBaseSamplePeriod);
  EXPECT_EQ(*samplePeriod(1, 0), kBaseSamplePeriod);  // hardware_concurrency() may say 0
}

TEST(SamplePeriodTest, TheEnvironmentOverridesOrIsRefused) {
  setenv("CCSCOPE_WAIT_SAMPLE_PERIOD", "20ms", 1);
  EXPECT_EQ(*samplePeriod(2, 2), std::chrono::microseconds(20000));
  for (const char* bad : {"fast", "0", "-5ms", "1h"}) {
    setenv("CCSCOPE_WAIT_SAMPLE_PERIOD", bad, 1);
    auto p = samplePeriod(2, 2);
    ASSERT_FALSE(p) << bad;
    EXPECT_NE(p.status().message().find("CCSCOPE_WAIT_SAMPLE_PERIOD"), std::string::npos);
  }
  unsetenv("CCSCOPE_WAIT_SAMPLE_PERIOD");
}

TEST(WaitSamplerTest, TicksTheBookkeepingClockOnlyWhileRunning) {
  using namespace std::chrono_literals;
  constexpr int64_t kSlackNs = 50'000'000;  // a descheduled ticker on a busy 2-core machine
  WaitSampler s(nullptr, 0, 2, std::chrono::microseconds(1000));
  std::this_thread::sleep_for(20ms);
  const int64_t a = core::TickClock::now();
  EXPECT_LE(std::abs(a - core::nowNs()), kSlackNs);
  std::this_thread::sleep_for(30ms);
  EXPECT_GT(core::TickClock::now(), a);
  WaitProfile p = s.stop();
  EXPECT_EQ(p.running[0], 0);  // no recorder: nothing sampled
  // Stopped: the clock reads the kernel again instead of a frozen tick.
  std::this_thread::sleep_for(30ms);
  EXPECT_LE(std::abs(core::TickClock::now() - core::nowNs()), 10'000'000);
}

}  // namespace
}  // namespace ccscope::bench
