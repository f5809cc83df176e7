// `--algo auto` at one size: which candidates the model calls close (closeCandidates), timing
// them there (timeClose), and what the timing teaches the model for the next size
// (Corrections::learn), with synthetic timers instead of a transport.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "collectives/auto_select.h"

namespace ccscope::collectives {
namespace {

using core::Status;

Status noCompute(std::span<double>) { return Status::ok(); }

Choice predicted(std::vector<std::pair<std::string, double>> p) {
  Choice ch;
  ch.predicted_s = std::move(p);
  ch.algo = findAlgorithm(Collective::kAllreduce, ch.predicted_s.front().first);
  return ch;
}

TEST(CloseCandidatesTest, ThoseWithinOneAndAHalfOfThePickAsTheBudgetAllows) {
  // 10 us each: cheap to time; tree and rabenseifner within 1.5x, recursive doubling not.
  auto ch = predicted(
      {{"ring", 10e-6}, {"tree", 12e-6}, {"rabenseifner", 14e-6}, {"recursive_doubling", 16e-6}});
  EXPECT_EQ(closeCandidates(ch), (std::vector<size_t>{0, 1, 2}));  // ring, tree, rabenseifner
  // A clear winner: the model decides alone.
  EXPECT_TRUE(closeCandidates(predicted({{"ring", 10e-6}, {"tree", 30e-6}})).empty());
  // 60 ms each: six rounds (a warm-up and five) of a warm-up run and one timed run cost 0.72 s
  // a candidate, more than the 0.5 s: the model decides.
  EXPECT_TRUE(closeCandidates(predicted({{"ring", 60e-3}, {"tree", 61e-3}})).empty());
  // 20 ms each: two fit (0.24 + 0.246 s), the third would not.
  EXPECT_EQ(
      closeCandidates(predicted({{"ring", 20e-3}, {"tree", 20.5e-3}, {"rabenseifner", 21e-3}})),
      (std::vector<size_t>{0, 1}));  // ring, tree
}

TEST(CloseCandidatesTest, AnExtrapolatedPredictionIsTimedWithinFourTimesThePick) {
  // Allreduce np 2 at 16 MiB, the other three pruned at 1 MiB.
  auto ch = predicted({{"recursive_doubling", 2.7e-3},
                       {"ring", 8.2e-3},
                       {"rabenseifner", 8.3e-3},
                       {"tree", 10.4e-3}});
  EXPECT_TRUE(closeCandidates(ch).empty()) << "measured, 3x behind is behind";
  ch.extrapolated = {"ring", "rabenseifner", "tree"};
  EXPECT_EQ(closeCandidates(ch), (std::vector<size_t>{0, 1, 2, 3}));
  ch.extrapolated = {"tree"};  // only the guesses get the wider factor
  EXPECT_EQ(closeCandidates(ch), (std::vector<size_t>{0, 3}));
  ch.extrapolated = {"ring", "rabenseifner", "tree"};
  ch.predicted_s[3].second = 11e-3;  // beyond 4x: left out
  EXPECT_EQ(closeCandidates(ch), (std::vector<size_t>{0, 1, 2}));
}

TEST(CorrectionsTest, ATimedSizeBecomesAnAnchorOfTheTimedCandidatesOnly) {
  Corrections c;
  c.bytes = {1 << 20, 4 << 20, 16 << 20};
  c.ratio = {{"ring", {1.0, 1.0, 1.0}}, {"recursive_doubling", {2.0, 1.0, 0.5}}};
  c.measured_to = {1 << 20, 16 << 20};  // ring pruned after 1 MiB
  const double rd_at_2m = c.at("recursive_doubling", 2 << 20);
  auto model = [](std::string_view name) { return name == "ring" ? 8e-3 : 4e-3; };
  // At an existing anchor: the timed candidate's ratio there is replaced, the others' kept.
  c.learn(16 << 20, {{"ring", 2e-3}}, model);
  EXPECT_EQ(c.bytes.size(), 3u);
  EXPECT_DOUBLE_EQ(c.at("ring", 16 << 20), 0.25);
  EXPECT_DOUBLE_EQ(c.at("ring", 64 << 20), 0.25) << "flat beyond the last anchor";
  EXPECT_DOUBLE_EQ(c.at("recursive_doubling", 16 << 20), 0.5);
  EXPECT_FALSE(c.extrapolated("ring", 32 << 20)) << "ring ran at 16 MiB now";
  EXPECT_TRUE(c.extrapolated("ring", 64 << 20));
  // At a new size between anchors: it is inserted, and the others' curves pass through it.
  c.learn(2 << 20, {{"ring", 4e-3}}, model);
  ASSERT_EQ(c.bytes, (std::vector<double>{1 << 20, 2 << 20, 4 << 20, 16 << 20}));
  EXPECT_DOUBLE_EQ(c.at("ring", 2 << 20), 0.5);
  EXPECT_NEAR(c.at("recursive_doubling", 2 << 20), rd_at_2m, 1e-12);
  EXPECT_DOUBLE_EQ(c.measured_to[0], 16 << 20) << "measured_to never shrinks";
  // Nothing timed, nothing measured, or no model time: nothing changes.
  Corrections before = c;
  c.learn(64 << 20, {}, model);
  c.learn(64 << 20, {{"tree", 1e-3}}, model);  // not a candidate of this table
  EXPECT_EQ(c.ratio, before.ratio);
  Corrections empty;
  empty.learn(1 << 20, {{"ring", 1e-3}}, model);
  EXPECT_TRUE(empty.bytes.empty());
}

TEST(CloseCandidatesTest, WhatWasTimedAtOneSizeIsWhereTheNextSizeStarts) {
  // Allreduce np 2 on huge pages: recursive doubling 3.3x ahead at the 1 MiB anchor, the others
  // pruned there and carried up as 3x slower. Timed at 16 MiB: ring 2.05 ms, Rabenseifner 2.41,
  // recursive doubling 3.62, so the model's ring is 4.4x too dear.
  const CostParams cost;
  const int ranks = 2;
  const double b16 = 16 << 20, b64 = 64 << 20;
  auto model = [&](std::string_view name, double b) {
    return findAlgorithm(Collective::kAllreduce, name)->cost(ranks, b, cost);
  };
  const std::map<std::string, double> predicted16 = {{"recursive_doubling", 2.85e-3},
                                                     {"ring", 9.03e-3},
                                                     {"rabenseifner", 9.46e-3},
                                                     {"tree", 11.6e-3}};
  Corrections c;
  c.bytes = {b16};
  for (const auto& [name, s] : predicted16) {
    c.ratio.push_back({name, {s / model(name, b16)}});
    c.measured_to.push_back(name == "recursive_doubling" ? b16 : 1 << 20);
  }
  Choice before = choose(Collective::kAllreduce, ranks, b64, cost, &c);
  EXPECT_EQ(std::string(before.algo->name), "recursive_doubling");
  EXPECT_TRUE(closeCandidates(before).empty())
      << "the others predicted 3x dearer: timing them would overrun, so nothing was timed";
  c.learn(b16, {{"ring", 2.054e-3}, {"rabenseifner", 2.409e-3}, {"recursive_doubling", 3.619e-3}},
          [&](std::string_view name) { return model(name, b16); });
  Choice after = choose(Collective::kAllreduce, ranks, b64, cost, &c);
  EXPECT_EQ(std::string(after.algo->name), "ring");
  std::vector<std::string> close;
  for (size_t k : closeCandidates(after)) close.push_back(after.predicted_s[k].first);
  EXPECT_EQ(close, (std::vector<std::string>{"ring", "rabenseifner", "recursive_doubling"}));
}

TEST(TimeCloseTest, TheFastestAtTheSizeWinsAndTheNoteSaysSo) {
  auto ch = predicted({{"ring", 10e-6}, {"tree", 12e-6}, {"rabenseifner", 14e-6}});
  std::map<std::string, double> truth = {{"ring", 9e-6}, {"tree", 6e-6}, {"rabenseifner", 8e-6}};
  std::vector<std::pair<std::string, int>> calls;
  TimeAtSize time = [&](const AlgorithmInfo& a, int iters) -> core::Result<double> {
    calls.emplace_back(a.name, iters);
    return truth[a.name];
  };
  ASSERT_TRUE(timeClose(ch, Collective::kAllreduce, closeCandidates(ch), time, noCompute).isOk());
  EXPECT_EQ(std::string(ch.algo->name), "tree");
  ASSERT_EQ(ch.timed_s.size(), 3u);
  EXPECT_EQ(ch.timed_s[0].first, "tree");
  EXPECT_EQ(ch.timed_s[1].first, "rabenseifner");
  ch.timing_seconds = 0.034;  // what the synthetic timer took is whatever this machine did
  EXPECT_EQ(ch.explain(),
            "ring 10.0 us < tree 12.0 us < rabenseifner 14.0 us; timed at this size in 0.03 s: "
            "tree 6.0 us < rabenseifner 8.0 us < ring 9.0 us");
  // A warm-up round, then five rounds taking turns forwards and backwards; the batches fill
  // 10 ms by the warm-up's time, at most 200 runs.
  ASSERT_EQ(calls.size(), 18u);
  std::vector<std::string> order;
  order.reserve(calls.size());
  for (auto& c : calls) order.push_back(c.first);
  const std::vector<std::string> forwards = {"ring", "tree", "rabenseifner"},
                                 backwards = {"rabenseifner", "tree", "ring"};
  std::vector<std::string> expected = forwards;  // the warm-up round
  for (int round = 1; round <= 5; ++round)
    for (const auto& name : round % 2 ? forwards : backwards) expected.push_back(name);
  EXPECT_EQ(order, expected);
  EXPECT_EQ(calls[4].second, 200) << "10 ms of 6 us runs, at most 200";
  EXPECT_EQ(calls[0].second, 20) << "the warm-up: 2 ms of the predicted 10 us, at most 20";
}

TEST(TimeCloseTest, RunsLongerThanPredictedGetFewerRoundsNotMoreTime) {
  // Predicted 12 ms each (the model, flat beyond its last anchor); the runs take 40 ms. Five
  // timed rounds of three (a warm-up run and one timed run each) would take 1.2 s.
  auto ch = predicted({{"ring", 12e-3}, {"tree", 12.5e-3}, {"rabenseifner", 13e-3}});
  int calls = 0;
  TimeAtSize time = [&](const AlgorithmInfo& a, int) -> core::Result<double> {
    ++calls;
    return std::string(a.name) == "tree" ? 38e-3 : 40e-3;
  };
  ASSERT_TRUE(timeClose(ch, Collective::kAllreduce, {0, 1, 2}, time, noCompute).isOk());
  EXPECT_EQ(calls, 3 + 3 * 3) << "a warm-up round and three timed rounds";
  EXPECT_EQ(std::string(ch.algo->name), "tree");
  ASSERT_EQ(ch.timed_s.size(), 3u);
}

TEST(TimeCloseTest, TheSlowestRanksTimesDecideAndAFailureIsReturned) {
  auto ch = predicted({{"ring", 10e-6}, {"tree", 12e-6}});
  TimeAtSize time = [](const AlgorithmInfo& a, int) -> core::Result<double> {
    return std::string(a.name) == "ring" ? 5e-6 : 7e-6;
  };
  // Another rank saw ring at 20 us: the reduction (max over ranks) makes tree the pick.
  auto max_over_ranks = [](std::span<double> v) {
    for (double& x : v)
      if (x == 5e-6) x = 20e-6;
    return Status::ok();
  };
  ASSERT_TRUE(timeClose(ch, Collective::kAllreduce, {0, 1}, time, max_over_ranks).isOk());
  EXPECT_EQ(std::string(ch.algo->name), "tree");
  TimeAtSize broken = [](const AlgorithmInfo&, int) -> core::Result<double> {
    return Status(core::Code::kUnavailable, "peer 3 exited");
  };
  EXPECT_FALSE(timeClose(ch, Collective::kAllreduce, {0, 1}, broken, noCompute).isOk());
}

}  // namespace
}  // namespace ccscope::collectives
