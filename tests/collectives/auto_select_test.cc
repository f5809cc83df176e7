// `--algo auto`'s decision logic without a transport: the interpolation of measured ratios,
// the anchor sizes, and measureCandidates() driven by a synthetic timer (the seam that stands
// for running a schedule), so pruning, the budget and the warm-up round are checked exactly.
#include "collectives/auto_select.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

namespace ccscope::collectives {
namespace {

using core::Status;

Status identity(std::span<double>) { return Status::ok(); }

TEST(CorrectionsTest, InterpolatesInLogSizeAndHoldsBeyondTheAnchors) {
  Corrections c;
  c.bytes = {1024, 4096, 16384};
  c.ratio = {{"ring", {2.0, 8.0, 1.0}}};
  EXPECT_DOUBLE_EQ(c.at("ring", 1024), 2.0);
  EXPECT_DOUBLE_EQ(c.at("ring", 4096), 8.0);
  EXPECT_DOUBLE_EQ(c.at("ring", 16384), 1.0);
  EXPECT_DOUBLE_EQ(c.at("ring", 8), 2.0);        // below the first anchor: flat
  EXPECT_DOUBLE_EQ(c.at("ring", 1 << 30), 1.0);  // above the last: flat
  EXPECT_NEAR(c.at("ring", 2048), 4.0, 1e-12);   // halfway in log size: geometric mean
  EXPECT_NEAR(c.at("ring", 8192), std::sqrt(8.0), 1e-12);
  EXPECT_DOUBLE_EQ(c.at("tree", 4096), 1.0);  // not measured: the formula alone
  EXPECT_DOUBLE_EQ(Corrections{}.at("ring", 4096), 1.0);
}

TEST(AnchorCountsTest, AscendingRoundedAndWithinTheBuffer) {
  for (Collective c : {Collective::kAllreduce, Collective::kAlltoall, Collective::kReduceScatter}) {
    for (int ranks : {2, 3, 8}) {
      auto counts = anchorCounts(c, ranks, 4, 1 << 20);
      ASSERT_FALSE(counts.empty());
      for (size_t i = 0; i < counts.size(); ++i) {
        EXPECT_LE(counts[i] * 4, 1u << 20);
        EXPECT_EQ(counts[i], roundCount(c, counts[i], ranks)) << "not a count the harness runs";
        EXPECT_GE(counts[i], static_cast<uint64_t>(ranks));
        if (i > 0) {
          EXPECT_GT(counts[i], counts[i - 1]);
        }
      }
      EXPECT_EQ(counts.back() * 4, roundCount(c, (1u << 20) / 4, ranks) * 4);  // up to the buffer
    }
  }
  EXPECT_TRUE(anchorCounts(Collective::kAllreduce, 2, 8, 4).empty());  // not one element fits
  EXPECT_EQ(anchorCounts(Collective::kAllreduce, 2, 1, size_t{1} << 34).back(), 16u << 20);
}

// A machine where the formulas are wrong in a known way: `truth` gives each algorithm's real
// seconds per operation at a size. Records every call.
struct FakeMachine {
  std::map<std::string, double (*)(double)> truth;
  size_t elem = 4;
  std::vector<std::tuple<std::string, uint64_t, int>> calls;
  double cold_factor = 1;  // the first round of each (algorithm, size) runs this much slower

  TimeAlgorithm timer() {
    return [this](const AlgorithmInfo& a, uint64_t count, int iters) -> core::Result<double> {
      bool first = std::none_of(calls.begin(), calls.end(), [&](auto& c) {
        return std::get<0>(c) == a.name && std::get<1>(c) == count;
      });
      calls.emplace_back(a.name, count, iters);
      return truth.at(a.name)(static_cast<double>(count * elem)) * (first ? cold_factor : 1.0);
    };
  }
};

// Allreduce on 4 ranks: recursive doubling wins small, the tree in the middle, ring large;
// Rabenseifner is never best and falls far behind from 1 MiB on.
double rdTime(double b) { return 2e-6 + b * 4e-9; }
double treeTime(double b) { return 6e-6 + b * 1e-9; }
double ringTime(double b) { return 30e-6 + b * 0.5e-9; }
double rabTime(double b) { return b < (1 << 20) ? 10e-6 + b * 2e-9 : b * 6e-9; }

FakeMachine allreduceMachine() {
  FakeMachine m;
  m.truth = {{"recursive_doubling", rdTime},
             {"tree", treeTime},
             {"ring", ringTime},
             {"rabenseifner", rabTime}};
  return m;
}

TEST(MeasureCandidatesTest, PicksWhatTheMachineMeasuresNotWhatTheFormulaSays) {
  FakeMachine m = allreduceMachine();
  m.cold_factor = 8;  // a cold first round must not count
  CostParams cost;
  auto got =
      measureCandidates(Collective::kAllreduce, 4, m.elem, 64 << 20, cost, m.timer(), identity);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  const Corrections& c = *got;
  ASSERT_FALSE(c.bytes.empty());
  EXPECT_FALSE(c.table.empty());
  for (double b : {8.0, 100.0, 4096.0, 8192.0, 16384.0, 65536.0, 300000.0, 1048576.0, 4194304.0,
                   16777216.0, 67108864.0}) {
    std::map<std::string, double> t;
    for (auto& [name, f] : m.truth) t[name] = f(b);
    std::string best = std::min_element(t.begin(), t.end(), [](auto& x, auto& y) {
                         return x.second < y.second;
                       })->first;
    Choice ch = choose(Collective::kAllreduce, 4, b, cost, &c);
    ASSERT_NE(ch.algo, nullptr);
    // Exact at anchors; between them within the interpolation's error of the best.
    EXPECT_LE(t[ch.algo->name], 1.15 * t[best])
        << b << " B: picked " << ch.algo->name << ", best " << best << ": " << ch.explain();
  }
}

TEST(MeasureCandidatesTest, AWarmUpRoundThenThreeRoundsTakingTurns) {
  FakeMachine m = allreduceMachine();
  auto got = measureCandidates(Collective::kAllreduce, 4, m.elem, 1 << 20, CostParams{}, m.timer(),
                               identity);
  ASSERT_TRUE(got.isOk());
  // Per anchor: 4 warm-ups (one per candidate), then 3 rounds of 4, the order reversing.
  ASSERT_EQ(m.calls.size() % 16, 0u);
  for (size_t i = 0; i < m.calls.size(); i += 16) {
    for (size_t k = 0; k < 4; ++k) {
      const auto& warm = m.calls[i + k];
      const auto& r1 = m.calls[i + 4 + k];
      const auto& r2 = m.calls[i + 8 + (3 - k)];
      const auto& r3 = m.calls[i + 12 + k];
      EXPECT_EQ(std::get<0>(warm), std::get<0>(r1));
      EXPECT_EQ(std::get<1>(warm), std::get<1>(r1));
      EXPECT_LE(std::get<2>(warm), 20);
      EXPECT_EQ(r1, r2);
      EXPECT_EQ(r1, r3);
      // The measured rounds fill about 2 ms (or run once where one run takes longer).
      double per_op = m.truth.at(std::get<0>(r1))(std::get<1>(r1) * 4.0);
      int iters = std::get<2>(r1);
      EXPECT_TRUE(iters == 200 || iters == 1 || std::abs(iters * per_op - 2e-3) <= per_op)
          << iters << " x " << per_op;
    }
  }
}

TEST(MeasureCandidatesTest, PrunesCandidatesFarBehindOnlyInTheBandwidthRegime) {
  FakeMachine m = allreduceMachine();
  auto got = measureCandidates(Collective::kAllreduce, 4, m.elem, 64 << 20, CostParams{}, m.timer(),
                               identity);
  ASSERT_TRUE(got.isOk());
  auto largest = [&](const std::string& name) {
    uint64_t most = 0;
    for (auto& [n, count, iters] : m.calls)
      if (n == name) most = std::max(most, count);
    return most * m.elem;
  };
  // Rabenseifner is > 3x the best at 1 MiB: not measured above it. Ring, 15x behind at 8 B,
  // is measured all the way (latency says nothing about large sizes).
  EXPECT_EQ(largest("rabenseifner"), 1u << 20);
  EXPECT_EQ(largest("ring"), 16u << 20);
  // Its ratio holds beyond: still predicted slower than the tree.
  Choice ch = choose(Collective::kAllreduce, 4, 16 << 20, CostParams{}, &*got);
  EXPECT_EQ(ch.predicted_s.back().first, "rabenseifner") << ch.explain();
  // ... but that prediction is carried from 1 MiB, and says so; ring's and the tree's are
  // measured at 16 MiB.
  auto guessed = [&](const char* name) {
    return std::find(ch.extrapolated.begin(), ch.extrapolated.end(), name) != ch.extrapolated.end();
  };
  EXPECT_TRUE(guessed("rabenseifner"));
  EXPECT_FALSE(guessed("ring"));
  EXPECT_FALSE(guessed("tree"));
  EXPECT_FALSE(got->extrapolated("rabenseifner", 2 << 20));
  EXPECT_TRUE(got->extrapolated("rabenseifner", 4 << 20));
  EXPECT_FALSE(got->extrapolated("ring", 32 << 20));
  EXPECT_TRUE(got->extrapolated("ring", 64 << 20));  // beyond the last anchor (16 MiB)
}

// Beyond the caches every candidate slows down per byte; one pruned at 1 MiB must slow down
// with the others, not keep its 1 MiB ratio and look fast at 64 MiB.
double a2aLinear(double b) { return 2e-6 + b * 1e-10 * std::sqrt(1 + b / 65536); }
double a2aPairwise(double b) { return 1.1 * a2aLinear(b); }
double a2aBruck(double b) { return 3 * a2aLinear(b); }

TEST(MeasureCandidatesTest, APrunedCandidateSlowsDownWithTheOthers) {
  FakeMachine m;
  m.truth = {{"pairwise", a2aPairwise}, {"linear", a2aLinear}, {"bruck", a2aBruck}};
  auto got = measureCandidates(Collective::kAlltoall, 4, m.elem, 64 << 20, CostParams{}, m.timer(),
                               identity);
  ASSERT_TRUE(got.isOk());
  for (double b : {4.0 * (1 << 20), 16.0 * (1 << 20), 64.0 * (1 << 20)}) {
    Choice ch = choose(Collective::kAlltoall, 4, b, CostParams{}, &*got);
    EXPECT_EQ(ch.algo->name, std::string("linear")) << b << " B: " << ch.explain();
    EXPECT_EQ(ch.predicted_s.back().first, "bruck") << b << " B: " << ch.explain();
  }
}

TEST(MeasureCandidatesTest, StopsWhenTheNextSizeWouldExceedTheBudget) {
  FakeMachine m;
  auto slow = +[](double b) { return 1e-3 + b * 1e-7; };  // 100 ms at 1 MiB
  m.truth = {{"recursive_doubling", slow}, {"tree", slow}, {"ring", slow}, {"rabenseifner", slow}};
  auto got = measureCandidates(Collective::kAllreduce, 4, m.elem, 64 << 20, CostParams{}, m.timer(),
                               identity);
  ASSERT_TRUE(got.isOk());
  double spent = 0;
  for (auto& [name, count, iters] : m.calls)
    spent += (iters + 1) * slow(static_cast<double>(count * m.elem));
  EXPECT_LT(got->bytes.back(), 1 << 20);
  EXPECT_LT(spent, 1.5) << "simulated seconds of measuring";
}

TEST(MeasureCandidatesTest, NothingToChooseOnOneRankOrOneAlgorithm) {
  FakeMachine m = allreduceMachine();
  auto one_rank =
      measureCandidates(Collective::kAllreduce, 1, 4, 1 << 20, CostParams{}, m.timer(), identity);
  ASSERT_TRUE(one_rank.isOk());
  EXPECT_TRUE(one_rank->bytes.empty());
  auto sendrecv =
      measureCandidates(Collective::kSendrecv, 4, 4, 1 << 20, CostParams{}, m.timer(), identity);
  ASSERT_TRUE(sendrecv.isOk());
  EXPECT_TRUE(m.calls.empty());
}

TEST(MeasureCandidatesTest, AlltoallvUsesTheAlltoallMeasurements) {
  FakeMachine m;
  auto fast = +[](double b) { return 1e-6 + b * 1e-10; };
  auto slow = +[](double b) { return 5e-6 + b * 1e-9; };
  m.truth = {{"pairwise", slow}, {"linear", fast}, {"bruck", slow}};
  auto got =
      measureCandidates(Collective::kAlltoallv, 4, 1, 1 << 20, CostParams{}, m.timer(), identity);
  ASSERT_TRUE(got.isOk());
  EXPECT_EQ(choose(Collective::kAlltoallv, 4, 65536, CostParams{}, &*got).algo->name,
            std::string("linear"));
}

TEST(MeasureCandidatesTest, AFailedRunFailsTheCalibration) {
  TimeAlgorithm broken = [](const AlgorithmInfo&, uint64_t, int) -> core::Result<double> {
    return Status(core::Code::kUnavailable, "peer 3 exited");
  };
  auto got =
      measureCandidates(Collective::kAllreduce, 4, 4, 1 << 20, CostParams{}, broken, identity);
  ASSERT_FALSE(got.isOk());
  EXPECT_NE(got.status().toString().find("peer 3 exited"), std::string::npos);
}

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
  // Allreduce np 2 at 16 MiB as one process predicted it: the other three pruned at 1 MiB.
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
  // Allreduce np 2 on huge pages, as a process of the sixth session's invocation B saw it:
  // recursive doubling 3.3x ahead at the 1 MiB anchor, the others pruned there and carried
  // up as 3x slower. At 16 MiB the timing found ring 2.05 ms, Rabenseifner 2.41, recursive
  // doubling 3.62: the model's ring was 4.4x too dear.
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
  ASSERT_TRUE(timeClose(ch, Collective::kAllreduce, closeCandidates(ch), time, identity).isOk());
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
  ASSERT_TRUE(timeClose(ch, Collective::kAllreduce, {0, 1, 2}, time, identity).isOk());
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
  EXPECT_FALSE(timeClose(ch, Collective::kAllreduce, {0, 1}, broken, identity).isOk());
}

}  // namespace
}  // namespace ccscope::collectives
