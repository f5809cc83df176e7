#include "bench/check_data.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "collectives/reduce_kernels.h"

namespace ccscope::bench {
namespace {

using core::DataType;
using core::ReduceOp;

// Reduces the crafted inputs of every rank with the real kernels, in a given rank order.
std::vector<char> reduceAll(DataType t, ReduceOp op, int n, uint64_t count, bool reverse) {
  size_t es = core::dataTypeSize(t);
  std::vector<char> acc(count * es + 1), in(count * es + 1);
  auto kernel = collectives::reduceKernel(t, collectives::reduceOpForKernel(op));
  for (int k = 0; k < n; ++k) {
    int r = reverse ? n - 1 - k : k;
    fillAllreduceInput(t, op, r, n, count, k == 0 ? acc.data() : in.data());
    if (k > 0) kernel(acc.data(), acc.data(), in.data(), count);
  }
  if (op == ReduceOp::kAvg && n > 1) collectives::scaleKernel(t)(acc.data(), count, n);
  return acc;
}

class CheckDataTest : public ::testing::TestWithParam<std::tuple<DataType, ReduceOp>> {};

TEST_P(CheckDataTest, CraftedInputsReduceExactlyInAnyOrder) {
  auto [t, op] = GetParam();
  for (int n : {1, 2, 3, 5, 8, 9, 17}) {
    const uint64_t count = 1000;
    for (bool reverse : {false, true}) {
      auto out = reduceAll(t, op, n, count, reverse);
      EXPECT_EQ(countAllreduceWrong(t, op, n, count, out.data()), 0)
          << core::dataTypeName(t) << " " << core::reduceOpName(op) << " n=" << n;
    }
  }
}

TEST_P(CheckDataTest, OneCorruptedElementIsCounted) {
  auto [t, op] = GetParam();
  auto out = reduceAll(t, op, 4, 100, false);
  out[37 * core::dataTypeSize(t)] ^= 1;
  EXPECT_EQ(countAllreduceWrong(t, op, 4, 100, out.data()), 1);
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndOps, CheckDataTest,
                         ::testing::Combine(::testing::ValuesIn(core::kAllDataTypes),
                                            ::testing::ValuesIn(core::kAllReduceOps)));

// The bit patterns of floats: countAllreduceWrong() compares bit for bit, so a mix-up is visible
// to it when the patterns differ.
std::vector<uint32_t> bitsOf(const std::vector<float>& v) {
  std::vector<uint32_t> bits;
  bits.reserve(v.size());
  for (float x : v) bits.push_back(std::bit_cast<uint32_t>(x));
  return bits;
}

TEST(CheckDataInputsTest, DifferAcrossRanksSoMixUpsAreVisible) {
  std::vector<float> a(64), b(64);
  fillAllreduceInput(DataType::kFloat, ReduceOp::kSum, 0, 4, 64, a.data());
  fillAllreduceInput(DataType::kFloat, ReduceOp::kSum, 1, 4, 64, b.data());
  EXPECT_NE(bitsOf(a), bitsOf(b));
}

}  // namespace
}  // namespace ccscope::bench
