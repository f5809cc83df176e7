#include "bench/bench_config.h"

#include <gtest/gtest.h>

namespace ccscope::bench {
namespace {

TEST(SweepSizesTest, FactorAndStep) {
  BenchConfig c;
  c.min_bytes = 8;
  c.max_bytes = 64;
  EXPECT_EQ(sweepSizes(c), (std::vector<uint64_t>{8, 16, 32, 64}));
  c.step = 20;
  EXPECT_EQ(sweepSizes(c), (std::vector<uint64_t>{8, 28, 48}));
  c.step = 0;
  c.min_bytes = c.max_bytes = 0;
  EXPECT_EQ(sweepSizes(c), (std::vector<uint64_t>{0}));
}

TEST(BenchConfigTest, RejectsInconsistentOptions) {
  BenchConfig c;
  c.min_bytes = 1 << 20;
  c.max_bytes = 1 << 10;
  auto s = validate(c);
  EXPECT_EQ(s.code(), core::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("larger than"), std::string::npos);
  c = BenchConfig{};
  c.factor = 1.0;
  EXPECT_FALSE(validate(c).isOk());
  c = BenchConfig{};
  c.iters = 0;
  EXPECT_FALSE(validate(c).isOk());
  EXPECT_TRUE(validate(BenchConfig{}).isOk());
}

// --placement in asks for rows a collective without an in-place form never makes: refused up
// front rather than a sweep of no rows.
TEST(BenchConfigTest, PlacementInNeedsAnInPlaceForm) {
  BenchConfig c;
  c.out_of_place = false;
  EXPECT_TRUE(validate(c).isOk());  // allreduce has one
  for (auto coll : {collectives::Collective::kAlltoall, collectives::Collective::kAlltoallv,
                    collectives::Collective::kSendrecv}) {
    c.collective = coll;
    core::Status s = validate(c);
    EXPECT_EQ(s.code(), core::Code::kInvalidArgument) << collectives::collectiveName(coll);
    EXPECT_NE(s.message().find("no in-place form"), std::string::npos) << s.message();
    c.out_of_place = true;
    EXPECT_TRUE(validate(c).isOk()) << collectives::collectiveName(coll);
    c.out_of_place = false;
  }
  c = BenchConfig{};
  c.out_of_place = c.in_place = false;
  EXPECT_FALSE(validate(c).isOk());
}

}  // namespace
}  // namespace ccscope::bench
