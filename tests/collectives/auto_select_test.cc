// `--algo auto`'s model without a transport: the interpolation of measured ratios, the anchor
// sizes, and measureCandidates() driven by a synthetic timer (the seam that stands for running
// a schedule), so pruning, the budget and the warm-up round are checked exactly. The timing of
// close candidates at one size is in auto_select_close_test.cc.
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

}  // namespace
}  // namespace ccscope::collectives

namespace ccscope::collectives {
namespace {

// The modelled cost of cutting `chunk` into segments of `seg` (measuredSegmentBytes' model).
double segmentedSeconds(double chunk, double seg, const CostParams& c) {
  return std::ceil(chunk / seg) * c.alpha + chunk * c.beta + seg * std::max(c.beta, c.gamma);
}

TEST(MeasuredSegmentBytes, IsWithinAFactorOfTwoOfTheCheapestPowerOfTwo) {
  for (double alpha : {2e-6, 15e-6, 300e-6})
    for (double gbps : {2.0, 20.0, 600.0})
      for (size_t chunk : {size_t{1} << 20, size_t{16} << 20, size_t{512} << 20}) {
        const CostParams c{alpha, 1e-9 / gbps, 1e-9 / (2 * gbps)};
        size_t best = 1;
        for (size_t s = 1; s <= chunk; s *= 2)
          if (segmentedSeconds(chunk, s, c) < segmentedSeconds(chunk, best, c)) best = s;
        const size_t got = measuredSegmentBytes(chunk, c, 4096);
        EXPECT_LE(segmentedSeconds(chunk, got, c), 1.02 * segmentedSeconds(chunk, best, c))
            << "alpha " << alpha << " GB/s " << gbps << " chunk " << chunk << ": " << got
            << " B against " << best << " B";
      }
}

TEST(MeasuredSegmentBytes, StaysBetweenTheTransportsMinimumAndTheChunk) {
  const CostParams slow{300e-6, 1e-9 / 600, 1e-9 / 1000};  // a host round trip per message
  EXPECT_EQ(measuredSegmentBytes(size_t{128} << 20, slow, 256 << 10), size_t{128} << 20);
  const CostParams fast{1e-7, 1e-9, 1e-10};
  EXPECT_EQ(measuredSegmentBytes(size_t{128} << 20, fast, 256 << 10), size_t{256} << 10);
  EXPECT_EQ(measuredSegmentBytes(size_t{64} << 10, fast, 256 << 10), size_t{64} << 10);
  EXPECT_EQ(measuredSegmentBytes(0, slow, 256 << 10), size_t{1});
}

}  // namespace
}  // namespace ccscope::collectives
