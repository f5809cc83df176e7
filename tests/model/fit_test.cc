#include "model/fit.h"

#include <gtest/gtest.h>

#include "collectives/algorithms.h"

namespace ccscope::model {
namespace {

using collectives::Collective;
using collectives::findAlgorithm;

SimInput input(const char* algo, int ranks, uint64_t bytes, int per_host) {
  SimInput in;
  in.algo = findAlgorithm(Collective::kAllreduce, algo);
  in.ranks = ranks;
  in.count = bytes / 4;
  in.segment_elems = std::max<uint64_t>(16384, std::min<uint64_t>(262144, in.count / ranks / 2));
  for (int r = 0; r < ranks; ++r) in.host_of.push_back(r / per_host);
  return in;
}

TEST(SimulateTest, RingCountsFollowTheSchedule) {
  Params p;
  auto s = simulate(input("ring", 4, 1 << 22, 4), p);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  // 2(n-1) steps of a 1 MiB chunk in two 512 KiB segments: the critical path carries at least
  // one segment per step and never more than the rank sends.
  EXPECT_GE(s->counts[byteIndex(kIntra)], 6.0 * (512 << 10));
  EXPECT_LE(s->counts[byteIndex(kIntra)], 6.0 * (1 << 20));
  EXPECT_EQ(s->counts[msgIndex(kInter)], 0);
  EXPECT_GT(s->counts[kReduceIndex], 0);
  double t = 0;
  auto v = paramVector(p);
  for (int k = 0; k < kFeatures; ++k) t += s->counts[k] * v[k];
  EXPECT_NEAR(t, s->seconds, 1e-12);
}

TEST(SimulateTest, HostsSplitTheHopClasses) {
  auto s = simulate(input("ring", 4, 1 << 22, 2), Params{});
  ASSERT_TRUE(s.isOk());
  EXPECT_GT(s->counts[byteIndex(kInter)], 0);
  EXPECT_GT(s->counts[byteIndex(kIntra)], 0);
}

TEST(SimulateTest, EveryAllreduceCompletes) {
  for (const char* a : {"ring", "tree", "recursive_doubling", "rabenseifner"})
    for (int n : {1, 2, 3, 5, 8}) {
      auto s = simulate(input(a, n, 1 << 20, 2), Params{});
      ASSERT_TRUE(s.isOk()) << a << " np" << n << ": " << s.status().toString();
      if (n > 1) {
        EXPECT_GT(s->seconds, 0) << a << n;
      }
    }
}

TEST(FitTest, RecoversTheParametersItWasGiven) {
  Params truth;
  truth.alpha = {8e-6, 30e-6};
  truth.beta = {1.0 / 4e9, 1.0 / 1.2e9};
  truth.gamma = 1.0 / 6e9;
  std::vector<FitRow> rows;
  for (const char* a : {"ring", "tree"})
    for (int n : {2, 4})
      for (int per_host : {1, 2})
        for (uint64_t b : {uint64_t{8} << 10, uint64_t{1} << 20, uint64_t{16} << 20}) {
          FitRow r;
          r.sim = input(a, n, b, per_host);
          auto s = simulate(r.sim, truth);
          ASSERT_TRUE(s.isOk());
          r.measured_s = s->seconds;
          rows.push_back(r);
        }
  auto f = fitRows(rows);
  ASSERT_TRUE(f.isOk()) << f.status().toString();
  EXPECT_GT(f->r2, 0.999);
  EXPECT_LT(f->max_abs_error, 0.01);
  for (int c = 0; c < kHopClasses; ++c) {
    EXPECT_NEAR(f->params.alpha[c] / truth.alpha[c], 1, 0.05) << c;
    EXPECT_NEAR(f->params.beta[c] / truth.beta[c], 1, 0.05) << c;
  }
  // Reductions overlap the next segment's transfer: little of gamma is on the critical path,
  // so it is the loosest of the five.
  EXPECT_NEAR(f->params.gamma / truth.gamma, 1, 0.5);
}

TEST(FitTest, NonNegativeLeastSquaresKeepsEveryCoefficientAtOrAboveZero) {
  // b = 2*x0 - 1*x1 exactly; the constrained optimum drops x1.
  std::vector<double> a = {1, 1, 2, 1, 3, 1, 4, 1};
  std::vector<double> b = {1, 3, 5, 7};
  auto x = nnls(a, b, 2);
  EXPECT_GE(x[1], 0);
  EXPECT_GT(x[0], 1.5);
}

}  // namespace
}  // namespace ccscope::model
