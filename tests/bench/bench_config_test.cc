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

}  // namespace
}  // namespace ccscope::bench
