// The staged path (device buffers over a transport that moves host memory) on a stand-in
// DeviceRuntime whose "device" is host memory: every collective and algorithm over shm is exact
// through the copies down and up, in and out of place, and the rows say where the buffers were
// and carry a device-timed mean. The CUDA runtime itself is tested on a GPU (tests/cuda/).
#include "collectives/staged_backend.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "bench/sweep.h"
#include "collectives/algorithms.h"
#include "collectives/schedule_backend.h"
#include "core/deadline.h"
#include "tests/transports/rank_runner.h"

namespace ccscope::bench {
namespace {

using collectives::Collective;
using transports::conformance::RankContext;

// Host memory standing in for a GPU's: what the staged path asks of a device, counted.
class HostAsDevice final : public collectives::DeviceRuntime {
 public:
  int device() const override { return 0; }
  std::string describe() const override { return "host-as-device"; }
  core::Result<void*> allocate(size_t bytes) override {
    blocks_.emplace_back(bytes);
    return static_cast<void*>(blocks_.back().data());
  }
  void release(void* /*p*/) override {}
  collectives::ComputeBackend& compute() override { return cpu_; }
  void* stream() override { return nullptr; }
  core::Status synchronize() override { return core::Status::ok(); }
  core::Status copy(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    copied += bytes;
    return core::Status::ok();
  }
  core::Status pinHost(void* /*p*/, size_t /*bytes*/) override {
    ++pinned;
    return core::Status::ok();
  }
  void unpinHost(void* /*p*/) override { --pinned; }
  core::Status mark(int index) override {
    if (marks_.size() <= static_cast<size_t>(index)) marks_.resize(index + 1);
    marks_[index] = core::nowNs();
    return core::Status::ok();
  }
  core::Result<double> elapsedUs(int from, int to) override {
    return (marks_.at(to) - marks_.at(from)) / 1e3;
  }
  uint64_t copied = 0;
  int pinned = 0;

 private:
  std::vector<std::vector<char>> blocks_;
  std::vector<int64_t> marks_;
  collectives::CpuCompute cpu_;
};

// The stand-in's memory is host memory: the host checks apply as they are.
class Forwarding final : public BufferData {
 public:
  core::Status fillInput(const CheckContext& c, void* in) override {
    return hostBufferData().fillInput(c, in);
  }
  core::Status poison(const CheckContext& c, void* buf, uint64_t elems) override {
    return hostBufferData().poison(c, buf, elems);
  }
  core::Result<int64_t> countWrong(const CheckContext& c, const void* out) override {
    return hostBufferData().countWrong(c, out);
  }
};

std::unique_ptr<BufferData> forwarding(collectives::DeviceRuntime& /*d*/) {
  return std::make_unique<Forwarding>();
}

struct StagedRows : reports::ResultSink {
  std::vector<reports::Measurement> rows;
  void onMeasurement(const reports::Measurement& m) override { rows.push_back(m); }
};

int everyCollectiveStaged(RankContext& c) {
  HostAsDevice dev;
  for (Collective coll : {Collective::kAllreduce, Collective::kReduceScatter,
                          Collective::kAllgather, Collective::kAlltoall, Collective::kAlltoallv,
                          Collective::kBroadcast, Collective::kSendrecv})
    for (const std::string& algo : collectives::algorithmNames(coll)) {
      collectives::AlgorithmOptions ao;
      ao.algorithm = algo;
      auto b = collectives::ScheduleBackend::create(c.transport, ao);
      RANK_CHECK(c, b.isOk(), b.status().toString());
      auto staged = collectives::stagedBackend(std::move(*b), dev);
      BenchConfig cfg;
      cfg.collective = coll;
      cfg.min_bytes = 8;
      cfg.max_bytes = uint64_t{256} * 1024;
      cfg.factor = 32;
      cfg.iters = 2;
      cfg.warmup = 1;
      cfg.root = c.size - 1;
      cfg.a2av = "moe:8,2";
      cfg.ops = {core::ReduceOp::kSum, core::ReduceOp::kAvg};
      StagedRows sink;
      const uint64_t before = dev.copied;
      auto s = runSweep(cfg, {staged.get()}, sink, forwarding);
      const std::string what = std::string(collectives::collectiveName(coll)) + "/" + algo;
      RANK_CHECK(c, s.isOk(), what + ": " + s.status().toString());
      RANK_CHECK(c, s->rows > 0 && s->wrong_total == 0,
                 what + ": " + std::to_string(s->wrong_total) + " wrong");
      RANK_CHECK(c, dev.copied > before, what + ": nothing was staged");
      for (const auto& m : sink.rows)
        RANK_CHECK(c, m.buffers == "cuda" && m.path == "staged" && m.device_time_us >= 0,
                   what + ": row says " + m.buffers + "/" + m.path);
    }
  RANK_CHECK(c, dev.pinned == 0, "pinned buffers left behind");
  return 0;
}

TEST(StagedBackend, EveryCollectiveExactThroughTheCopies) {
  EXPECT_EQ(transports::conformance::runRanks(transports::conformance::localRanks("shm", 3, 120),
                                              everyCollectiveStaged),
            "");
}

}  // namespace
}  // namespace ccscope::bench
