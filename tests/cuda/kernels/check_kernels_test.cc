// The device fill, poison and check kernels against bench/check_data.h's CPU functions, for
// every collective and dtype: the same bytes, the same counts, one corrupted element counted.
#include "bench/cuda/check_kernels.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "bench/alltoallv_plan.h"
#include "bench/check_data.h"
#include "bench/check_values.h"
#include "core/dtype_dispatch.h"
#include "tests/cuda/kernels/device_test_util.h"

namespace ccscope::bench {
namespace {

using collectives::Collective;
using core::DataType;
using core::ReduceOp;
using testing::DeviceBuffer;

constexpr int kRanks = 5;
constexpr uint64_t kCount = 10007;

constexpr Collective kCollectives[] = {Collective::kAllreduce, Collective::kReduceScatter,
                                       Collective::kAllgather, Collective::kAlltoall,
                                       Collective::kAlltoallv, Collective::kBroadcast,
                                       Collective::kSendrecv};

// The exact output of a context, built on the host from the shared value functions.
std::vector<char> expectedOutput(const CheckContext& c, const AlltoallvOffsets& offsets,
                                 uint64_t elems) {
  std::vector<char> out(elems * core::dataTypeSize(c.dtype) + 1);
  ValueContext v{c.collective,       c.op, c.rank, c.ranks, c.count, c.root, offsets.send.data(),
                 offsets.recv.data()};
  core::dispatchDataType(c.dtype, [&]<typename T>() {
    T* o = reinterpret_cast<T*>(out.data());
    for (uint64_t e = 0; e < elems; ++e) o[e] = values::expectedAt<T>(v, e);
  });
  out.pop_back();
  return out;
}

class CudaCheckTest : public ::testing::TestWithParam<std::tuple<Collective, DataType>> {
 protected:
  void SetUp() override {
    CCSCOPE_SKIP_WITHOUT_DEVICE();
    auto spec = parseAlltoallvSpec("skewed:1.5");
    ASSERT_TRUE(spec.isOk());
    auto plan = makeAlltoallvPlan(*spec, kRanks, kCount);
    ASSERT_TRUE(plan.isOk());
    plan_ = *plan;
  }

  void checkRank(const CheckContext& c) {
    const AlltoallvOffsets offsets = alltoallvOffsets(plan_, c.rank);
    DeviceBuffer d_send(offsets.send.size() * sizeof(uint64_t));
    DeviceBuffer d_recv(offsets.recv.size() * sizeof(uint64_t));
    ASSERT_TRUE(d_send.ok() && d_recv.ok());
    CCSCOPE_ASSERT_CUDA(cudaMemcpy(d_send.get(), offsets.send.data(), offsets.send.size() * 8,
                                   cudaMemcpyHostToDevice));
    CCSCOPE_ASSERT_CUDA(cudaMemcpy(d_recv.get(), offsets.recv.data(), offsets.recv.size() * 8,
                                   cudaMemcpyHostToDevice));
    const bool v = c.collective == Collective::kAlltoallv;
    DeviceCheckContext dc =
        deviceCheckContext(c, v ? reinterpret_cast<const uint64_t*>(d_send.get()) : nullptr,
                           v ? reinterpret_cast<const uint64_t*>(d_recv.get()) : nullptr);
    const size_t es = core::dataTypeSize(c.dtype);

    // Input: the device fill equals the host fill.
    std::vector<char> host_in(dc.in_elems * es);
    fillInput(c, host_in.data());
    DeviceBuffer d_in(host_in.size());
    ASSERT_TRUE(d_in.ok());
    CCSCOPE_ASSERT_OK(fillInputOnDevice(dc, d_in.get(), nullptr));
    EXPECT_TRUE(d_in.download() == host_in) << "input differs";

    // Output: poisoned, everything wrong; exact, nothing wrong; one bit flipped, one wrong.
    std::vector<char> host_out(dc.out_elems * es);
    poison(c, host_out.data(), dc.out_elems);
    DeviceBuffer d_out(host_out.size());
    ASSERT_TRUE(d_out.ok());
    CCSCOPE_ASSERT_OK(poisonOnDevice(dc, d_out.get(), dc.out_elems, nullptr));
    EXPECT_TRUE(d_out.download() == host_out) << "poison differs";
    expectWrong(dc, d_out, countWrong(c, host_out.data()));
    EXPECT_EQ(countWrong(c, host_out.data()), static_cast<int64_t>(dc.out_elems));

    std::vector<char> exact = expectedOutput(c, offsets, dc.out_elems);
    ASSERT_EQ(countWrong(c, exact.data()), 0);
    ASSERT_EQ(d_out.upload(exact), cudaSuccess);
    expectWrong(dc, d_out, 0);
    if (dc.out_elems == 0) return;
    exact[(dc.out_elems / 2) * es] ^= 1;
    ASSERT_EQ(countWrong(c, exact.data()), 1);
    ASSERT_EQ(d_out.upload(exact), cudaSuccess);
    expectWrong(dc, d_out, 1);
  }

  static void expectWrong(const DeviceCheckContext& dc, const DeviceBuffer& out, int64_t want) {
    auto wrong = countWrongOnDevice(dc, out.get(), nullptr);
    ASSERT_TRUE(wrong.isOk()) << wrong.status().toString();
    EXPECT_EQ(*wrong, want);
  }

  collectives::AlltoallvPlan plan_;
};

TEST_P(CudaCheckTest, DeviceDataMatchesHostData) {
  auto [collective, t] = GetParam();
  const std::vector<ReduceOp> ops =
      collectives::isReduction(collective)
          ? std::vector<ReduceOp>(std::begin(core::kAllReduceOps), std::end(core::kAllReduceOps))
          : std::vector<ReduceOp>{ReduceOp::kSum};
  const uint64_t count = collectives::roundCount(collective, kCount, kRanks);
  for (ReduceOp op : ops)
    for (int rank : {0, 3}) {
      CheckContext c{collective, t, op, rank, kRanks, count, /*root=*/3, &plan_};
      SCOPED_TRACE(std::string(core::reduceOpName(op)) + " rank " + std::to_string(rank));
      checkRank(c);
      if (HasFatalFailure()) return;
    }
}

INSTANTIATE_TEST_SUITE_P(AllCollectivesAndTypes, CudaCheckTest,
                         ::testing::Combine(::testing::ValuesIn(kCollectives),
                                            ::testing::ValuesIn(core::kAllDataTypes)),
                         [](const auto& info) {
                           return std::string(
                                      collectives::collectiveName(std::get<0>(info.param))) +
                                  "_" + core::dataTypeName(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace ccscope::bench
