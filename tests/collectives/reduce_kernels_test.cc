#include "collectives/reduce_kernels.h"

#include <gtest/gtest.h>

namespace ccscope::collectives {
namespace {

using core::DataType;
using core::ReduceOp;

TEST(ReduceKernelsTest, IntegerOpsIncludingWraparound) {
  int8_t a[4] = {100, -5, 3, 7}, b[4] = {100, 2, -3, 7}, d[4];
  reduceKernel(DataType::kInt8, ReduceOp::kSum)(d, a, b, 4);
  EXPECT_EQ(d[0], static_cast<int8_t>(200));
  EXPECT_EQ(d[1], -3);
  reduceKernel(DataType::kInt8, ReduceOp::kMin)(d, a, b, 4);
  EXPECT_EQ(d[1], -5);
  reduceKernel(DataType::kInt8, ReduceOp::kMax)(d, a, b, 4);
  EXPECT_EQ(d[2], 3);
  reduceKernel(DataType::kInt8, ReduceOp::kProd)(d, a, b, 4);
  EXPECT_EQ(d[3], 49);
}

TEST(ReduceKernelsTest, HalfAndBfloat16GoThroughFloat) {
  core::Half a[2] = {core::toHalf(1.5f), core::toHalf(-2)},
             b[2] = {core::toHalf(2.25f), core::toHalf(8)}, d[2];
  reduceKernel(DataType::kHalf, ReduceOp::kSum)(d, a, b, 2);
  EXPECT_EQ(core::toFloat(d[0]), 3.75f);
  EXPECT_EQ(core::toFloat(d[1]), 6.0f);
  core::Bfloat16 x[1] = {core::toBfloat16(3)}, y[1] = {core::toBfloat16(-4)}, z[1];
  reduceKernel(DataType::kBfloat16, ReduceOp::kProd)(z, x, y, 1);
  EXPECT_EQ(core::toFloat(z[0]), -12.0f);
  scaleKernel(DataType::kBfloat16)(z, 1, 4);
  EXPECT_EQ(core::toFloat(z[0]), -3.0f);
}

TEST(ReduceKernelsTest, AvgReducesWithSumAndScalesOnce) {
  EXPECT_EQ(reduceOpForKernel(ReduceOp::kAvg), ReduceOp::kSum);
  uint64_t v[3] = {9, 10, 11};
  scaleKernel(DataType::kUint64)(v, 3, 3);
  EXPECT_EQ(v[0], 3u);
  EXPECT_EQ(v[1], 3u);  // integer avg truncates, as NCCL does
  double d[1] = {1.0};
  scaleKernel(DataType::kDouble)(d, 1, 4);
  EXPECT_EQ(d[0], 0.25);
}

}  // namespace
}  // namespace ccscope::collectives
