// The bus-bandwidth factors are nccl-tests' (docs/metrics.md gives them): a table here, not the
// formula again, so that a slip in either shows.
#include "collectives/collective.h"

#include <gtest/gtest.h>

namespace ccscope::collectives {
namespace {

TEST(BusbwFactorTest, MatchesNcclTests) {
  struct Row {
    Collective c;
    int ranks;
    double factor;
  };
  const Row rows[] = {
      {Collective::kAllreduce, 1, 0.0},      {Collective::kAllreduce, 2, 1.0},
      {Collective::kAllreduce, 4, 1.5},      {Collective::kAllreduce, 8, 1.75},
      {Collective::kReduceScatter, 4, 0.75}, {Collective::kAllgather, 8, 0.875},
      {Collective::kAlltoall, 2, 0.5},       {Collective::kAlltoallv, 5, 0.8},
      {Collective::kBroadcast, 8, 1.0},      {Collective::kSendrecv, 2, 1.0},
  };
  for (const Row& r : rows)
    EXPECT_DOUBLE_EQ(busbwFactor(r.c, r.ranks), r.factor)
        << collectiveName(r.c) << " at " << r.ranks << " ranks";
}

TEST(BusbwFactorTest, NoRanksIsZeroNotADivisionByZero) {
  EXPECT_EQ(busbwFactor(Collective::kAllreduce, 0), 0.0);
  EXPECT_EQ(busbwFactor(Collective::kBroadcast, 0), 0.0);
}

}  // namespace
}  // namespace ccscope::collectives
