// The sweep's CUDA-graph mode (-G) on one rank: a stand-in device whose "graph" is a count of
// the collectives captured into it (the narrow seam: what is tested is the harness's capture,
// launches, drains and time per collective, not CUDA's graphs).
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/sweep.h"
#include "collectives/compute.h"

namespace ccscope::bench {
namespace {

using core::Status;

BenchConfig smallSweep() {
  BenchConfig c;
  c.collective = collectives::Collective::kAllreduce;
  c.min_bytes = c.max_bytes = 1024;
  c.iters = 3;
  c.warmup = 0;
  c.checks = 0;
  return c;
}

// A "GPU" whose stream is a list of enqueued collectives: a capture counts them into the graph;
// a launch queues the graph's collectives and a mark after it; passed() says whether the marks
// were reached, which only the backend's drain makes happen (taking `per_run` a collective).
class GraphDevice final : public collectives::DeviceRuntime {
 public:
  int device() const override { return 0; }
  std::string describe() const override { return "graph-device"; }
  core::Result<void*> allocate(size_t) override { return nullptr; }
  void release(void*) override {}
  collectives::ComputeBackend& compute() override { return cpu_; }
  void* stream() override { return nullptr; }
  Status synchronize() override { return Status::ok(); }
  Status copy(void*, const void*, size_t) override { return Status::ok(); }
  Status pinHost(void*, size_t) override { return Status::ok(); }
  void unpinHost(void*) override {}
  Status mark(int index) override {
    if (capturing) return Status(core::Code::kInternal, "a mark inside a capture");
    marks.push_back({index, queued});
    return Status::ok();
  }
  core::Result<double> elapsedUs(int, int) override { return 0.0; }
  core::Result<bool> passed(int index) override {
    for (const auto& [i, at] : marks)
      if (i == index) return ran >= at;
    return Status(core::Code::kInternal, "no such mark");
  }
  Status beginCapture() override {
    if (kept) return Status(core::Code::kInternal, "the last graph was never released");
    capturing = true;
    graph = 0;
    ++captures;
    return Status::ok();
  }
  Status endCapture(bool keep) override {
    capturing = false;
    kept = keep;
    return Status::ok();
  }
  Status launchGraph() override {
    if (!kept) return Status(core::Code::kInternal, "launch without a graph");
    ++launches;
    queued += graph;
    return Status::ok();
  }
  void releaseGraph() override { kept = false; }
  // Runs what is queued: the backend's drain calls it.
  void runQueued() {
    std::this_thread::sleep_for(per_run * (queued - ran));
    ran = queued;
  }
  bool capturing = false, kept = false;
  int graph = 0;  // collectives in the captured graph
  int captures = 0, launches = 0, queued = 0, ran = 0;
  std::vector<std::pair<int, int>> marks;  // (index, collectives queued before it)
  std::chrono::microseconds per_run{0};

 private:
  collectives::CpuCompute cpu_;
};

// A backend on the stand-in device that runs nothing and counts its uncaptured runs; it cannot
// be captured (as our schedules cannot).
class DeviceBackend : public collectives::CollectiveBackend {
 public:
  DeviceBackend(GraphDevice& d, std::string algo) : d_(d), algo_(std::move(algo)) {}
  std::string algorithm() const override { return algo_; }
  std::string transport() const override { return "none"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status allocate(size_t max_bytes, core::HostPages) override {
    buf_.assign(2 * max_bytes + 64, 0);
    return Status::ok();
  }
  char* sendBuffer() override { return buf_.data(); }
  char* recvBuffer() override { return buf_.data() + buf_.size() / 2; }
  Status prepare(const collectives::OpConfig&) override { return Status::ok(); }
  Status run(bool, core::Deadline) override {
    if (d_.capturing) return Status(core::Code::kInternal, "run inside a capture");
    ++runs;
    return Status::ok();
  }
  Status barrier(core::Deadline) override { return Status::ok(); }
  Status maxDoubles(std::span<double>, core::Deadline) override { return Status::ok(); }
  Status sumInts(std::span<int64_t>, core::Deadline) override { return Status::ok(); }
  collectives::DeviceRuntime* device() override { return &d_; }
  int runs = 0;

 protected:
  GraphDevice& dev() { return d_; }

 private:
  GraphDevice& d_;
  std::string algo_;
  std::vector<char> buf_;
};

// NCCL's native backend as the sweep sees it: run() outside graphs, enqueue() inside.
class GraphBackend final : public DeviceBackend {
 public:
  explicit GraphBackend(GraphDevice& d) : DeviceBackend(d, "native") {}
  bool capturable() const override { return true; }
  // Into the graph inside a capture; straight onto the stream outside one (-z 0).
  Status enqueue(bool, core::Deadline) override {
    if (fail_enqueue) return Status(core::Code::kRemoteError, "peer gone");
    ++(dev().capturing ? dev().graph : dev().queued);
    ++enqueued;
    return Status::ok();
  }
  Status drain(core::Deadline, const std::function<core::Result<bool>()>& passed) override {
    ++drains;
    dev().runQueued();
    CCSCOPE_ASSIGN_OR_RETURN(bool reached, passed());
    return reached ? Status::ok() : Status(core::Code::kInternal, "drained short of its mark");
  }
  int enqueued = 0, drains = 0;
  bool fail_enqueue = false;
};

class NoCheck final : public BufferData {
 public:
  Status fillInput(const CheckContext&, void*) override { return Status::ok(); }
  Status poison(const CheckContext&, void*, uint64_t) override { return Status::ok(); }
  core::Result<int64_t> countWrong(const CheckContext&, const void*) override { return int64_t{0}; }
};

std::unique_ptr<BufferData> noCheck(collectives::DeviceRuntime&) {
  return std::make_unique<NoCheck>();
}

struct Rows : reports::ResultSink {
  void onMeasurement(const reports::Measurement& m) override { all.push_back(m); }
  std::vector<reports::Measurement> all;
};

// One out-of-place size, 4 timed iterations, one checked run.
BenchConfig timedSweep() {
  BenchConfig c = smallSweep();
  c.in_place = false;
  c.iters = 4;
  c.checks = 1;
  return c;
}

// The sweep's one row's time per collective; -1 where it failed or wrote another number of rows.
double timePerCollectiveUs(const BenchConfig& cfg, GraphBackend& b) {
  Rows rows;
  if (!runSweep(cfg, {&b}, rows, noCheck).isOk() || rows.all.size() != 1) return -1;
  return rows.all[0].time_us;
}

TEST(SweepGraphTest, TimedIterationsAreOneGraphLaunchedGTimesAndTimedPerCollective) {
  BenchConfig cfg = timedSweep();
  cfg.graph_launches = 5;
  GraphDevice dev;
  dev.per_run = std::chrono::microseconds(2000);
  GraphBackend b(dev);
  const double us = timePerCollectiveUs(cfg, b);
  ASSERT_GT(us, 0);
  // The checked run is a one-collective graph launched once; the leg, a graph of -n launched -G,
  // drained launch by launch; every graph released.
  EXPECT_EQ(dev.captures, 2);
  EXPECT_EQ(b.enqueued, 1 + cfg.iters);
  EXPECT_EQ(dev.launches, 1 + cfg.graph_launches);
  EXPECT_EQ(b.drains, 1 + cfg.graph_launches);
  EXPECT_FALSE(dev.kept);
  // Uncaptured: the size's first collective (NCCL's set-up) and the barrier-separated series.
  EXPECT_EQ(b.runs, 1 + cfg.iters);
  // 20 collectives of 2 ms in the timed launches: 2 ms each, not 10 (per launch) nor 0.4.
  EXPECT_GE(us, 1900);
  EXPECT_LT(us, 4000);
}

TEST(SweepGraphTest, AFailedEnqueueStillEndsTheCaptureAndFailsTheSweep) {
  BenchConfig cfg = smallSweep();
  cfg.checks = 0;
  cfg.graph_launches = 2;
  GraphDevice dev;
  GraphBackend b(dev);
  b.fail_enqueue = true;
  Rows rows;
  Status s = runSweep(cfg, {&b}, rows, noCheck).status();
  EXPECT_EQ(s.code(), core::Code::kRemoteError) << s.toString();
  EXPECT_FALSE(dev.capturing);
  EXPECT_FALSE(dev.kept);  // a failed capture is not instantiated
  EXPECT_EQ(dev.launches, 0);
}

// -z 0: each leg's back-to-back iterations enqueued without waiting and drained once, timed per
// collective over the whole leg; no graph anywhere, and the checked run waits as usual.
TEST(SweepGraphTest, NonBlockingEnqueuesTheLegAndDrainsItOnce) {
  BenchConfig cfg = timedSweep();
  cfg.blocking = 0;
  GraphDevice dev;
  dev.per_run = std::chrono::microseconds(2000);
  GraphBackend b(dev);
  const double us = timePerCollectiveUs(cfg, b);
  ASSERT_GT(us, 0);
  EXPECT_EQ(dev.captures, 0);
  EXPECT_EQ(dev.launches, 0);
  EXPECT_EQ(b.enqueued, cfg.iters);
  EXPECT_EQ(b.drains, 1);
  EXPECT_EQ(dev.ran, cfg.iters);
  EXPECT_EQ(b.runs, cfg.checks + cfg.iters);  // the checked run and the barrier-separated series
  // Four collectives of 2 ms drained at once: 2 ms each, not 8 nor 0.5.
  EXPECT_GE(us, 1900);
  EXPECT_LT(us, 4000);
}

TEST(SweepGraphTest, NonBlockingRefusesABackendThatCannotEnqueue) {
  BenchConfig cfg = smallSweep();
  cfg.blocking = 0;
  GraphDevice dev;
  DeviceBackend b(dev, "ring");
  Rows rows;
  EXPECT_EQ(runSweep(cfg, {&b}, rows, noCheck).status().code(), core::Code::kUnsupported);
  EXPECT_EQ(b.runs, 0);
}

// A backend that says it cannot be captured (our schedules) is refused, not run uncaptured.
TEST(SweepGraphTest, ABackendThatCannotBeCapturedIsRefused) {
  BenchConfig cfg = smallSweep();
  cfg.graph_launches = 2;
  GraphDevice dev;
  DeviceBackend b(dev, "ring");
  Rows rows;
  EXPECT_EQ(runSweep(cfg, {&b}, rows, noCheck).status().code(), core::Code::kUnsupported);
  EXPECT_EQ(dev.captures, 0);
}

}  // namespace
}  // namespace ccscope::bench
