// The device reductions against the CPU kernels (collectives/reduce_kernels.h), bit for bit:
// every dtype and op, out of place and in place, lengths around the vector width and a few MiB,
// pointers sharing a misalignment (vector body after a scalar head) or not (scalar path).
#include "collectives/cuda/cuda_kernels.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "collectives/reduce_kernels.h"
#include "tests/cuda/kernels/device_test_util.h"

namespace ccscope::collectives {
namespace {

using core::DataType;
using core::ReduceOp;
using testing::DeviceBuffer;

constexpr uint64_t kGuard = 5;  // extra elements around every range: an overrun shows

enum class Placement { kOutOfPlace, kDstIsA, kDstIsB };

// Element offsets of dst, a and b inside their buffers.
struct Offsets {
  uint64_t dst, a, b;
};

std::vector<uint64_t> lengthsFor(DataType t) {
  const uint64_t few_mib = (3u << 20) / core::dataTypeSize(t) + 3;
  return {1, 7, 4096 + 3, few_mib};
}

class CudaReduceTest : public ::testing::TestWithParam<std::tuple<DataType, ReduceOp>> {
 protected:
  void SetUp() override { CCSCOPE_SKIP_WITHOUT_DEVICE(); }

  // Runs one reduction on the device and on the CPU over the same bytes; the whole buffers
  // (guards included) must match bit for bit.
  void expectSame(uint64_t n, Offsets off, Placement place) {
    auto [t, op] = GetParam();
    const size_t es = core::dataTypeSize(t);
    const uint64_t elems = n + kGuard;
    std::vector<char> ha = testing::randomElements(t, elems, n * 3 + 1);
    std::vector<char> hb = testing::randomElements(t, elems, n * 3 + 2);
    std::vector<char> hd(elems * es, static_cast<char>(0x5a));
    DeviceBuffer da(ha.size()), db(hb.size()), dd(hd.size());
    ASSERT_TRUE(da.ok() && db.ok() && dd.ok());
    ASSERT_EQ(da.upload(ha), cudaSuccess);
    ASSERT_EQ(db.upload(hb), cudaSuccess);
    ASSERT_EQ(dd.upload(hd), cudaSuccess);

    std::vector<char>* hout = place == Placement::kDstIsA   ? &ha
                              : place == Placement::kDstIsB ? &hb
                                                            : &hd;
    const DeviceBuffer* dout = place == Placement::kDstIsA   ? &da
                               : place == Placement::kDstIsB ? &db
                                                             : &dd;
    const uint64_t dst_off = place == Placement::kDstIsA   ? off.a
                             : place == Placement::kDstIsB ? off.b
                                                           : off.dst;
    CCSCOPE_ASSERT_OK(reduceOnDevice(t, op, dout->get() + dst_off * es, da.get() + off.a * es,
                                     db.get() + off.b * es, n, nullptr));
    CCSCOPE_ASSERT_CUDA(cudaDeviceSynchronize());
    reduceKernel(t, reduceOpForKernel(op))(hout->data() + dst_off * es, ha.data() + off.a * es,
                                           hb.data() + off.b * es, n);
    std::vector<char> got = dout->download();
    ASSERT_EQ(got.size(), hout->size());
    EXPECT_TRUE(got == *hout) << core::dataTypeName(t) << " " << core::reduceOpName(op)
                              << " n=" << n << " offsets " << off.dst << "," << off.a << ","
                              << off.b << " placement " << static_cast<int>(place) << ": "
                              << firstDifference(got, *hout, es);
  }

  static std::string firstDifference(const std::vector<char>& x, const std::vector<char>& y,
                                     size_t es) {
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (x[i] != y[i]) return "first difference at element " + std::to_string(i / es);
    return "sizes differ";
  }
};

TEST_P(CudaReduceTest, OutOfPlaceMatchesCpuBitForBit) {
  for (uint64_t n : lengthsFor(std::get<0>(GetParam())))
    for (Offsets off : {Offsets{0, 0, 0}, Offsets{1, 1, 1}, Offsets{0, 1, 3}, Offsets{3, 2, 0}})
      expectSame(n, off, Placement::kOutOfPlace);
}

TEST_P(CudaReduceTest, InPlaceMatchesCpuBitForBit) {
  for (uint64_t n : lengthsFor(std::get<0>(GetParam())))
    for (Offsets off : {Offsets{0, 0, 0}, Offsets{0, 3, 3}, Offsets{0, 1, 2}}) {
      expectSame(n, off, Placement::kDstIsA);
      expectSame(n, off, Placement::kDstIsB);
    }
}

TEST_P(CudaReduceTest, ScaleMatchesCpuBitForBit) {
  auto [t, op] = GetParam();
  if (op != ReduceOp::kAvg) GTEST_SKIP() << "scale is avg's final step";
  const size_t es = core::dataTypeSize(t);
  for (uint64_t n : lengthsFor(t))
    for (uint64_t off : {0, 1, 3})
      for (int divisor : {1, 3, 8}) {
        std::vector<char> h = testing::randomElements(t, n + kGuard, n + divisor);
        DeviceBuffer d(h.size());
        ASSERT_TRUE(d.ok());
        ASSERT_EQ(d.upload(h), cudaSuccess);
        CCSCOPE_ASSERT_OK(scaleOnDevice(t, d.get() + off * es, n, divisor, nullptr));
        CCSCOPE_ASSERT_CUDA(cudaDeviceSynchronize());
        scaleKernel(t)(h.data() + off * es, n, divisor);
        EXPECT_TRUE(d.download() == h)
            << core::dataTypeName(t) << " n=" << n << " off=" << off << " divisor=" << divisor;
      }
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndOps, CudaReduceTest,
                         ::testing::Combine(::testing::ValuesIn(core::kAllDataTypes),
                                            ::testing::ValuesIn(core::kAllReduceOps)),
                         [](const auto& info) {
                           return std::string(core::dataTypeName(std::get<0>(info.param))) + "_" +
                                  core::reduceOpName(std::get<1>(info.param));
                         });

TEST(CudaReduceArgumentsTest, ZeroLengthIsANoOpAndZeroDivisorIsRejected) {
  CCSCOPE_SKIP_WITHOUT_DEVICE();
  CCSCOPE_ASSERT_OK(
      reduceOnDevice(DataType::kFloat, ReduceOp::kSum, nullptr, nullptr, nullptr, 0, nullptr));
  DeviceBuffer d(64);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(scaleOnDevice(DataType::kFloat, d.get(), 4, 0, nullptr).code(),
            core::Code::kInvalidArgument);
  EXPECT_EQ(
      reduceOnDevice(DataType::kFloat, ReduceOp::kSum, d.get() + 1, d.get(), d.get(), 2, nullptr)
          .code(),
      core::Code::kInvalidArgument);
}

}  // namespace
}  // namespace ccscope::collectives
