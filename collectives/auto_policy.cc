#include "collectives/auto_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "collectives/reduce_kernels.h"

namespace ccscope::collectives {

using core::Code;
using core::Status;

namespace {

constexpr size_t kLargeBytes = 1 << 20;
constexpr int kSmallRounds = 200, kLargeRounds = 8;
constexpr uint32_t kTagCalib = 0xCA11B;

// Time per round of "send to the right, receive from the left" with `bytes` each way.
core::Result<double> shiftSeconds(transports::Transport& t, const transports::MemoryRegion& mr,
                                  size_t bytes, int rounds, core::Deadline d) {
  int n = t.size(), right = (t.rank() + 1) % n, left = (t.rank() + n - 1) % n;
  int64_t t0 = core::nowNs();
  for (int i = 0; i < rounds; ++i) {
    CCSCOPE_ASSIGN_OR_RETURN(auto r, t.postRecv(left, kTagCalib, mr, kLargeBytes, bytes));
    CCSCOPE_ASSIGN_OR_RETURN(auto s, t.postSend(right, kTagCalib, mr, 0, bytes));
    // Cancelled on a timeout: the calibration buffer is freed right after a failure.
    Status sent = t.waitOrCancel(s, d);
    Status got = t.waitOrCancel(r, d);
    CCSCOPE_RETURN_IF_ERROR(sent);
    CCSCOPE_RETURN_IF_ERROR(got);
  }
  return (core::nowNs() - t0) / 1e9 / rounds;
}

// The buffer calibration runs on: host memory, or the device's where the rows run there (a
// device transport moves nothing else, and its costs there are the ones that matter).
struct CalibrationBuffer {
  CalibrationBuffer(size_t n, core::HostPages pages, DeviceRuntime* d) : device(d) {
    if (!d) host = core::HostBuffer(n, pages);
  }
  ~CalibrationBuffer() {
    if (dev) device->release(dev);
  }
  CalibrationBuffer(const CalibrationBuffer&) = delete;
  CalibrationBuffer& operator=(const CalibrationBuffer&) = delete;
  char* data() { return device ? static_cast<char*>(dev) : host.data(); }
  core::HostBuffer host;
  DeviceRuntime* device;
  void* dev = nullptr;
};

// Seconds per byte of a float sum: on this core, or by the device's kernels on its stream.
core::Result<double> gammaSeconds(char* buf, DeviceRuntime* device) {
  const int64_t g0 = core::nowNs();
  if (!device) {
    auto sum = reduceKernel(core::DataType::kFloat, core::ReduceOp::kSum);
    for (int i = 0; i < kLargeRounds; ++i) sum(buf, buf, buf + kLargeBytes, kLargeBytes / 4);
  } else {
    ComputeBackend& c = device->compute();
    CCSCOPE_RETURN_IF_ERROR(c.bind(core::DataType::kFloat, core::ReduceOp::kSum, 1));
    for (uint32_t i = 0; i < kLargeRounds; ++i) {
      LocalStep step{OpKind::kReduce, buf, buf, buf + kLargeBytes, kLargeBytes / 4};
      CCSCOPE_RETURN_IF_ERROR(c.start(step, i).status());
    }
    CCSCOPE_RETURN_IF_ERROR(device->synchronize());
    for (uint32_t token = 0; c.nextFinished(&token);) {
    }
    CCSCOPE_RETURN_IF_ERROR(c.takeError());
  }
  return (core::nowNs() - g0) / 1e9 / kLargeRounds / kLargeBytes;
}

}  // namespace

core::Result<Calibration> calibrate(transports::Transport& t, core::HostPages pages,
                                    const std::function<Status(std::span<double>)>& max_over_ranks,
                                    core::Deadline d, DeviceRuntime* device) {
  int64_t start = core::nowNs();
  Calibration c;
  if (t.size() > 1) {
    CalibrationBuffer buf(2 * kLargeBytes, pages, device);
    if (device) {
      CCSCOPE_ASSIGN_OR_RETURN(buf.dev, device->allocate(2 * kLargeBytes));
    }
    CCSCOPE_ASSIGN_OR_RETURN(transports::Registration reg,
                             device
                                 ? t.registerMemory(buf.data(), 2 * kLargeBytes,
                                                    transports::MemoryKind::kCuda, device->device())
                                 : t.registerMemory(buf.data(), 2 * kLargeBytes));
    const transports::MemoryRegion& mr = reg.region();
    CCSCOPE_RETURN_IF_ERROR(shiftSeconds(t, mr, 8, 20, d).status());  // warm-up
    CCSCOPE_ASSIGN_OR_RETURN(double small, shiftSeconds(t, mr, 8, kSmallRounds, d));
    CCSCOPE_ASSIGN_OR_RETURN(double large, shiftSeconds(t, mr, kLargeBytes, kLargeRounds, d));
    CCSCOPE_ASSIGN_OR_RETURN(double gamma, gammaSeconds(buf.data(), device));
    double v[3] = {small, large, gamma};
    CCSCOPE_RETURN_IF_ERROR(max_over_ranks(v));
    c.cost.alpha = v[0];
    c.cost.beta = std::max(1e-12, (v[1] - v[0]) / kLargeBytes);
    c.cost.gamma = v[2];
  }
  c.seconds = (core::nowNs() - start) / 1e9;
  return c;
}

core::Result<std::unique_ptr<AutoPolicy>> AutoPolicy::create(transports::Transport& t,
                                                             HarnessChannel& harness,
                                                             core::HostPages pages,
                                                             double timeout_s,
                                                             DeviceRuntime* device) {
  std::unique_ptr<AutoPolicy> p(new AutoPolicy(t.rank(), t.size(), harness, timeout_s));
  auto cal = calibrate(
      t, pages, [&](std::span<double> v) { return p->maxOverRanks(v); },
      core::Deadline::afterSeconds(timeout_s), device);
  if (!cal) return cal.takeStatus().prepend("calibrating --algo auto");
  p->calibration_ = *cal;
  p->device_buffers_ = device != nullptr;
  return p;
}

std::string AutoPolicy::setupNote() const {
  const CostParams& c = calibration_.cost;
  return fmt::format(
      "auto: cost model calibrated in {:.2f} s on {} buffers: alpha {:.2f} us, beta {:.3f} ns/B, "
      "gamma {:.3f} ns/B",
      calibration_.seconds, device_buffers_ ? "device" : "host", c.alpha * 1e6, c.beta * 1e9,
      c.gamma * 1e9);
}

Status AutoPolicy::maxOverRanks(std::span<double> v) {
  return harness_.maxDoubles(v, core::Deadline::afterSeconds(timeout_s_));
}

core::Result<const AlgorithmInfo*> AutoPolicy::choose(const OpConfig& cfg, size_t buffer_bytes,
                                                      CandidateRunner& runner) {
  const double bytes = static_cast<double>(cfg.plan ? cfg.plan->maxVolume() : cfg.count) *
                       static_cast<double>(core::dataTypeSize(cfg.dtype));
  CCSCOPE_ASSIGN_OR_RETURN(Corrections * measured, corrections(cfg, buffer_bytes, runner));
  Choice ch = collectives::choose(cfg.collective, size_, bytes, calibration_.cost, measured);
  // Close candidates are timed at this very size, as the rows will run it (not with an
  // all-to-allv plan or a broadcast root other than 0: timeAlgorithm runs neither).
  if (!cfg.plan && (cfg.collective != Collective::kBroadcast || cfg.root == 0)) {
    CCSCOPE_RETURN_IF_ERROR(timeClose(
        ch, cfg.collective, closeCandidates(ch),
        [&](const AlgorithmInfo& a, int iters) {
          return timeAlgorithm(a, cfg, cfg.count, iters, runner);
        },
        [&](std::span<double> v) { return maxOverRanks(v); }));
    // The next sizes start from what was timed here (every rank learns the same: the times
    // are the slowest rank's).
    measured->learn(bytes, ch.timed_s, [&](std::string_view name) {
      const AlgorithmInfo* a = findAlgorithm(cfg.collective, name);
      return a ? a->cost(size_, bytes, calibration_.cost) : 0.0;
    });
  }
  note_ = fmt::format("auto picked {} (model calibrated in {:.2f} s, {} sizes measured): {}",
                      ch.algo ? ch.algo->name : "?", calibration_.seconds + measured->seconds,
                      measured->bytes.size(), ch.explain());
  return ch.algo;
}

core::Result<double> AutoPolicy::timeAlgorithm(const AlgorithmInfo& a, const OpConfig& cfg,
                                               uint64_t count, int iters, CandidateRunner& runner) {
  OpConfig op = cfg;
  op.collective = a.collective;
  op.count = count;
  op.root = 0;
  op.plan = nullptr;
  ScheduleParams p{
      a.collective, rank_, size_, count, runner.segmentElems(op), cfg.op == core::ReduceOp::kAvg, 0,
      nullptr};
  calib_sched_ = a.build(p);
  CCSCOPE_RETURN_IF_ERROR(runner.bindCandidate(calib_sched_, op));
  auto deadline = [&] { return core::Deadline::afterSeconds(timeout_s_); };
  // Recorded like the measured runs: a hang while calibrating shows in the flight recorder.
  auto once = [&] {
    Status s = runner.runCandidate(a, op, deadline());
    if (s.isOk()) return s;
    return s.prepend(fmt::format("auto measuring {} {} at {} B", collectiveName(a.collective),
                                 a.name, count * core::dataTypeSize(cfg.dtype)));
  };
  CCSCOPE_RETURN_IF_ERROR(once());
  CCSCOPE_RETURN_IF_ERROR(harness_.barrier(deadline()));
  int64_t t0 = core::nowNs();
  for (int i = 0; i < iters; ++i) CCSCOPE_RETURN_IF_ERROR(once());
  return (core::nowNs() - t0) / 1e9 / iters;
}

core::Result<Corrections*> AutoPolicy::corrections(const OpConfig& cfg, size_t buffer_bytes,
                                                   CandidateRunner& runner) {
  const std::tuple<int, int, int> key{static_cast<int>(cfg.collective), static_cast<int>(cfg.dtype),
                                      isReduction(cfg.collective) ? static_cast<int>(cfg.op) : -1};
  if (auto it = corrections_.find(key); it != corrections_.end()) return &it->second;
  auto m = measureCandidates(
      cfg.collective, size_, core::dataTypeSize(cfg.dtype), buffer_bytes, calibration_.cost,
      [&](const AlgorithmInfo& a, uint64_t count, int iters) {
        return timeAlgorithm(a, cfg, count, iters, runner);
      },
      [&](std::span<double> v) { return maxOverRanks(v); });
  if (!m) return m.takeStatus().prepend("calibrating --algo auto");
  // Developer aid: what auto measured, in us per operation at each anchor size.
  if (rank_ == 0 && std::getenv("CCSCOPE_AUTO_TABLE"))
    std::fprintf(stderr, "auto measured %s:\n%s\n", collectiveName(cfg.collective),
                 m->table.c_str());
  return &corrections_.emplace(key, std::move(*m)).first->second;
}

}  // namespace ccscope::collectives
