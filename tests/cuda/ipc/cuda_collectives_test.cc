// Every collective and every algorithm with device buffers, checked exactly on the GPU: over
// cuda-ipc (device to device) at 2 and 4 ranks sharing one GPU, on its host progress path and on
// its stream path (the rank's stream given, as bench gives it), and staged through pinned host
// buffers over shm and tcp. The harness's barriers and statistics run on an shm channel apart.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/device/cuda_buffer_data.h"
#include "bench/sweep.h"
#include "collectives/algorithms.h"
#include "collectives/device/cuda_device.h"
#include "collectives/harness_channel.h"
#include "collectives/schedule_backend.h"
#include "collectives/staged_backend.h"
#include "tests/cuda/ipc/gpu_probe.h"
#include "tests/transports/rank_runner.h"

namespace ccscope::bench {
namespace {

using collectives::Collective;
using transports::conformance::RankContext;

constexpr Collective kCollectives[] = {Collective::kAllreduce, Collective::kReduceScatter,
                                       Collective::kAllgather, Collective::kAlltoall,
                                       Collective::kAlltoallv, Collective::kBroadcast,
                                       Collective::kSendrecv};

core::Result<std::unique_ptr<collectives::HarnessChannel>> harness(RankContext& c) {
  transports::TransportOptions o;
  o.local_ranks = c.size;
  o.scope = "harness/";
  CCSCOPE_ASSIGN_OR_RETURN(auto t, transports::makeTransport("shm", o));
  CCSCOPE_RETURN_IF_ERROR(t->connect(c.store, c.deadline));
  return collectives::HarnessChannel::create(std::move(t));
}

// The stream-path variant opens the rank's device before its transport, which then orders
// its copies on the device's stream, as bench does (one per rank process, after fork).
std::unique_ptr<collectives::DeviceRuntime>& streamDevice() {
  static std::unique_ptr<collectives::DeviceRuntime> d;
  return d;
}

transports::conformance::RankRunOptions onTheRankStream(int np) {
  auto o = transports::conformance::localRanks("cuda-ipc", np, 280);
  o.make = [](const transports::TransportOptions& t)
      -> core::Result<std::unique_ptr<transports::Transport>> {
    CCSCOPE_ASSIGN_OR_RETURN(streamDevice(), collectives::device::openCudaDevice(0, 0));
    transports::TransportOptions mine = t;
    mine.cuda_stream = streamDevice()->stream();
    return transports::makeTransport("cuda-ipc", mine);
  };
  return o;
}

// One sweep per collective x algorithm; rows and wrong elements summed over every sweep.
int everyCollective(RankContext& c) {
  const bool on_stream = streamDevice() != nullptr;
  core::Result<std::unique_ptr<collectives::DeviceRuntime>> dev =
      on_stream ? std::move(streamDevice()) : collectives::device::openCudaDevice(c.rank, 0);
  RANK_CHECK(c, dev.isOk(), dev.status().toString());
  RANK_CHECK(c, c.transport.caps().stream_ordered == on_stream, c.transport.setupNote());
  auto channel = harness(c);
  RANK_CHECK(c, channel.isOk(), channel.status().toString());
  const bool direct = c.transport.caps().memory_kinds.has(transports::MemoryKind::kCuda);
  for (Collective coll : kCollectives)
    for (const std::string& algo : collectives::algorithmNames(coll)) {
      collectives::AlgorithmOptions ao;
      ao.algorithm = algo;
      if (direct) ao.device = dev->get();
      auto b = collectives::ScheduleBackend::create(c.transport, ao, channel->get());
      RANK_CHECK(c, b.isOk(), b.status().toString());
      std::unique_ptr<collectives::CollectiveBackend> backend(std::move(*b));
      if (!direct) backend = collectives::stagedBackend(std::move(backend), **dev);
      BenchConfig cfg;
      cfg.collective = coll;
      cfg.algorithms = {algo};
      cfg.transport = c.transport.name();
      cfg.device = "cuda";
      cfg.min_bytes = 8;
      cfg.max_bytes = size_t{4} << 20;
      cfg.factor = 16;
      cfg.iters = 3;
      cfg.warmup = 1;
      cfg.dtypes = {core::DataType::kFloat, core::DataType::kBfloat16};
      cfg.ops = {core::ReduceOp::kSum, core::ReduceOp::kAvg};
      cfg.a2av = "moe:8,2";
      cfg.timeout_s = 30;
      reports::ResultSink sink;
      auto s = runSweep(cfg, {backend.get()}, sink, device::cudaBufferData);
      const std::string what = std::string(collectives::collectiveName(coll)) + "/" + algo;
      RANK_CHECK(c, s.isOk(), what + ": " + s.status().toString());
      RANK_CHECK(c, s->rows > 0 && s->wrong_total == 0,
                 what + ": " + std::to_string(s->wrong_total) + " wrong elements");
    }
  return 0;
}

class CudaCollectives : public ::testing::TestWithParam<std::pair<std::string, int>> {};

TEST_P(CudaCollectives, EveryAlgorithmExact) {
  SKIP_WITHOUT_GPU();
  const auto& [transport, np] = GetParam();
  auto o = transport == "cuda-ipc-stream" ? onTheRankStream(np)
                                          : transports::conformance::localRanks(transport, np, 280);
  EXPECT_EQ(transports::conformance::runRanks(o, everyCollective), "");
}

INSTANTIATE_TEST_SUITE_P(OneGpu, CudaCollectives,
                         ::testing::Values(std::pair<std::string, int>{"cuda-ipc", 2},
                                           std::pair<std::string, int>{"cuda-ipc", 4},
                                           std::pair<std::string, int>{"cuda-ipc-stream", 2},
                                           std::pair<std::string, int>{"cuda-ipc-stream", 4},
                                           std::pair<std::string, int>{"shm", 2},
                                           std::pair<std::string, int>{"tcp", 2}),
                         [](const auto& info) {
                           std::string n =
                               info.param.first + "_np" + std::to_string(info.param.second);
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace ccscope::bench
