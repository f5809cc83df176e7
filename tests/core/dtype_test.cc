#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/dtype_dispatch.h"

namespace ccscope::core {
namespace {

TEST(HalfTest, EveryNonNanPatternRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    Half h{static_cast<uint16_t>(bits)};
    float f = toFloat(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(toHalf(f).bits, h.bits) << "pattern " << bits;
  }
}

TEST(HalfTest, RoundsToNearestEven) {
  EXPECT_EQ(toHalf(1.0f).bits, 0x3c00);
  EXPECT_EQ(toHalf(2049.0f).bits, toHalf(2048.0f).bits);  // tie goes to even
  EXPECT_EQ(toHalf(2051.0f).bits, toHalf(2052.0f).bits);
  EXPECT_EQ(toHalf(1e6f).bits, 0x7c00);                        // overflow to infinity
  EXPECT_EQ(toFloat(toHalf(5.9604645e-08f)), 5.9604645e-08f);  // smallest subnormal
}

TEST(Bfloat16Test, ExactIntegersAndRounding) {
  for (int i = -256; i <= 256; ++i) EXPECT_EQ(toFloat(toBfloat16(static_cast<float>(i))), i);
  EXPECT_EQ(toFloat(toBfloat16(257.0f)), 256.0f);  // tie to even
  EXPECT_EQ(toFloat(toBfloat16(259.0f)), 260.0f);
}

TEST(DataTypeTest, ParsesNamesListsAndRejectsUnknown) {
  EXPECT_EQ(*parseDataType("bfloat16"), DataType::kBfloat16);
  EXPECT_EQ(*parseDataType("fp16"), DataType::kHalf);
  auto all = parseDataTypeList("all");
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(all->size(), 10u);
  auto two = parseDataTypeList("int8,double");
  ASSERT_TRUE(two.isOk());
  EXPECT_EQ((*two)[1], DataType::kDouble);
  auto bad = parseDataTypeList("float,float7");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("float7"), std::string::npos);
  EXPECT_FALSE(parseReduceOp("mean").isOk());
  EXPECT_EQ(dataTypeSize(DataType::kUint64), 8u);
}

// Integer sums and products wrap, as on a GPU; signed overflow is undefined in C++, so the
// sanitized build (scripts/sanitize.sh asan) fails here if it is ever computed signed.
TEST(CombineTest, IntegersWrapOnOverflow) {
  constexpr auto kI64 = std::numeric_limits<int64_t>::max();
  EXPECT_EQ((combine<ReduceOp::kProd, int64_t>(kI64, 2)), -2);
  EXPECT_EQ((combine<ReduceOp::kSum, int32_t>(std::numeric_limits<int32_t>::max(), 1)),
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ((combine<ReduceOp::kProd, uint8_t>(255, 255)), 1);
  EXPECT_EQ((combine<ReduceOp::kProd, int8_t>(-128, -1)), -128);
  EXPECT_EQ((combine<ReduceOp::kMin, int8_t>(-128, 5)), -128);
}

}  // namespace
}  // namespace ccscope::core
