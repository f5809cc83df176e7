#include "bench/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "bench/alltoallv_plan.h"
#include "bench/check_data.h"
#include "bench/graph_capture.h"
#include "bench/size_plan.h"
#include "bench/stats.h"
#include "collectives/collective.h"

namespace ccscope::bench {

using collectives::CollectiveBackend;
using collectives::OpConfig;
using core::Deadline;
using core::Status;

namespace {

class SizeRunner {
 public:
  // stats_: the back-to-back mean, one latency per iteration, the device-timed mean.
  SizeRunner(const BenchConfig& cfg, CollectiveBackend& b, std::unique_ptr<BufferData> device_data)
      : cfg_(cfg),
        b_(b),
        stats_(cfg.iters + 2),
        own_data_(std::move(device_data)),
        data_(own_data_ ? own_data_.get() : &hostBufferData()) {}

  Deadline opDeadline() const { return Deadline::afterSeconds(cfg_.timeout_s); }
  CollectiveBackend& backend() { return b_; }

  core::Result<int64_t> check(const OpConfig& op, bool in_place) {
    if (cfg_.checks == 0) return int64_t{-1};
    CheckContext ctx{op.collective, op.dtype, op.op,   b_.rank(),
                     b_.size(),     op.count, op.root, op.plan};
    auto geo = collectives::geometry(op.collective, op.count, b_.size(), b_.rank(), op.plan);
    size_t elem = core::dataTypeSize(op.dtype);
    char* in = in_place ? b_.recvBuffer() + geo.in_place_in_offset * elem : b_.sendBuffer();
    char* out = b_.recvBuffer() + (in_place ? geo.in_place_out_offset * elem : 0);
    int64_t wrong = 0;
    for (int c = 0; c < cfg_.checks; ++c) {
      // Poison the whole receive buffer first: a collective that writes nothing must fail.
      CCSCOPE_RETURN_IF_ERROR(
          data_->poison(ctx, b_.recvBuffer(), std::max(geo.in_elems, geo.out_elems)));
      CCSCOPE_RETURN_IF_ERROR(data_->fillInput(ctx, in));
      if (b_.rank() == cfg_.corrupt_rank && c == 0) b_.corruptNextResult();
      CCSCOPE_RETURN_IF_ERROR(graphs() ? graphRun(op, in_place) : b_.run(in_place, opDeadline()));
      CCSCOPE_ASSIGN_OR_RETURN(int64_t w, data_->countWrong(ctx, out));
      wrong += w;
    }
    std::vector<int64_t> w{wrong};
    CCSCOPE_RETURN_IF_ERROR(b_.sumInts(w, opDeadline()));
    return w[0];
  }

  // One leg of a measurement: iterations [from, to) of the back-to-back loop and of the
  // barrier-separated series (with --interleave a size is measured in two legs, one early and one
  // late in the point; alone, in one). The first leg checks the results first.
  Status measureLeg(const OpConfig& op, bool in_place, int from, int to) {
    Partial& p = partial_[in_place];
    if (from == 0) {
      p = Partial{};
      p.lat.assign(cfg_.iters, 0);
      CCSCOPE_ASSIGN_OR_RETURN(p.wrong, check(op, in_place));
    }
    if (from >= to) return Status::ok();
    // Back-to-back iterations: the mean per operation (what nccl-tests reports).
    if (graphs()) {
      CCSCOPE_RETURN_IF_ERROR(graphLeg(op, p, in_place, to - from));
    } else if (cfg_.blocking == 0) {
      CCSCOPE_RETURN_IF_ERROR(enqueuedLeg(p, in_place, to - from));
    } else {
      CCSCOPE_RETURN_IF_ERROR(b_.barrier(opDeadline()));
      CCSCOPE_RETURN_IF_ERROR(mark(0));
      int64_t t0 = core::nowNs();
      for (int i = from; i < to; ++i) {
        if (skip_next_) {  // test-only: this rank skips one collective
          skip_next_ = false;
          continue;
        }
        CCSCOPE_RETURN_IF_ERROR(b_.run(in_place, opDeadline()));
      }
      p.back_to_back_ns += core::nowNs() - t0;
      CCSCOPE_RETURN_IF_ERROR(mark(1));
      CCSCOPE_ASSIGN_OR_RETURN(double dev_us, deviceUs(0, 1));
      p.device_us += dev_us;
    }
    // Barrier-separated iterations: the per-iteration distribution (from the device's events
    // where the buffers are on a GPU).
    for (int i = from; i < to; ++i) {
      CCSCOPE_RETURN_IF_ERROR(b_.barrier(opDeadline()));
      CCSCOPE_RETURN_IF_ERROR(mark(2));
      int64_t s = core::nowNs();
      CCSCOPE_RETURN_IF_ERROR(b_.run(in_place, opDeadline()));
      p.lat[i] = (core::nowNs() - s) / 1e3;
      CCSCOPE_RETURN_IF_ERROR(mark(3));
      if (b_.device()) {
        CCSCOPE_ASSIGN_OR_RETURN(p.lat[i], deviceUs(2, 3));
      }
    }
    return Status::ok();
  }

  // After the last leg: the slowest rank's figures (one small reduction).
  core::Result<reports::Measurement> finish(bool in_place) {
    Partial& p = partial_[in_place];
    reports::Measurement m;
    m.wrong = p.wrong;
    stats_[0] = p.back_to_back_ns / 1e3 / cfg_.iters;
    std::copy(p.lat.begin(), p.lat.end(), stats_.begin() + 1);
    stats_.back() = b_.device() ? p.device_us / cfg_.iters : -1;
    CCSCOPE_RETURN_IF_ERROR(b_.maxDoubles(stats_, opDeadline()));
    m.time_us = stats_[0];
    m.lat = latencyStats(std::vector<double>(stats_.begin() + 1, stats_.end() - 1));
    m.device_time_us = stats_.back();
    m.in_place = in_place;
    return m;
  }

  Status warmup(bool in_place) {
    for (int i = 0; i < cfg_.warmup; ++i) CCSCOPE_RETURN_IF_ERROR(b_.run(in_place, opDeadline()));
    return Status::ok();
  }

  // Before a backend's first size: the first few hundred runs of a fresh process or schedule
  // are slow (connections, page tables, caches, the scheduler learning who wakes whom;
  // docs/performance.md, "Measuring on small shared machines"), which -w runs at one size do
  // not cover. Batches of -w runs until kColdStartSeconds have passed on the slowest rank, or
  // kColdStartBatches; every rank takes the same decision from the same reduced time, so all
  // run the same collectives. -w 0 means no warm-up at all.
  Status coldStart() {
    if (cfg_.warmup <= 0) return Status::ok();
    int64_t t0 = core::nowNs();
    for (int batch = 0; batch < kColdStartBatches; ++batch) {
      CCSCOPE_RETURN_IF_ERROR(warmup(false));
      std::vector<double> elapsed{(core::nowNs() - t0) / 1e9};
      CCSCOPE_RETURN_IF_ERROR(b_.maxDoubles(elapsed, opDeadline()));
      if (elapsed[0] >= kColdStartSeconds) break;
    }
    return Status::ok();
  }
  static constexpr double kColdStartSeconds = 0.1;
  static constexpr int kColdStartBatches = 100;

 private:
  // A measurement between its legs, per placement (out-of-place, in-place).
  struct Partial {
    int64_t wrong = -1;
    int64_t back_to_back_ns = 0;
    double device_us = 0;     // the back-to-back loops on the device's clock
    std::vector<double> lat;  // us, by iteration
  };
  bool graphs() const { return cfg_.graph_launches > 0; }
  // Before a size's first capture, one collective outside it: NCCL connects peers and sets up
  // an algorithm's resources at first use, which a capture must not be the first to do.
  Status uncapturedFirst(const OpConfig& op, bool in_place) {
    if (uncaptured_count_[in_place] == op.count) return Status::ok();
    uncaptured_count_[in_place] = op.count;
    return b_.run(in_place, opDeadline());
  }
  // One checked collective in graph mode: the result comes out of a graph.
  Status graphRun(const OpConfig& op, bool in_place) {
    CCSCOPE_RETURN_IF_ERROR(uncapturedFirst(op, in_place));
    CCSCOPE_RETURN_IF_ERROR(captureCollectives(b_, in_place, 1, cfg_.timeout_s));
    return launchCaptured(b_, 1, 1, cfg_.timeout_s);
  }
  // The back-to-back part of a leg in graph mode: the capture is untimed; the launches are
  // timed, and the time per collective is theirs over all the collectives they ran.
  Status graphLeg(const OpConfig& op, Partial& p, bool in_place, int iters) {
    CCSCOPE_RETURN_IF_ERROR(uncapturedFirst(op, in_place));
    CCSCOPE_RETURN_IF_ERROR(captureCollectives(b_, in_place, iters, cfg_.timeout_s, &skip_next_));
    CCSCOPE_RETURN_IF_ERROR(b_.barrier(opDeadline()));
    CCSCOPE_RETURN_IF_ERROR(mark(0));
    const int64_t t0 = core::nowNs();
    CCSCOPE_RETURN_IF_ERROR(launchCaptured(b_, iters, cfg_.graph_launches, cfg_.timeout_s));
    p.back_to_back_ns += (core::nowNs() - t0) / cfg_.graph_launches;
    CCSCOPE_RETURN_IF_ERROR(mark(1));
    CCSCOPE_ASSIGN_OR_RETURN(double dev_us, deviceUs(0, 1));
    p.device_us += dev_us / cfg_.graph_launches;
    return Status::ok();
  }
  // The back-to-back part of a leg with -z 0, timed from the first enqueue to the drain.
  Status enqueuedLeg(Partial& p, bool in_place, int iters) {
    CCSCOPE_RETURN_IF_ERROR(b_.barrier(opDeadline()));
    const int64_t t0 = core::nowNs();
    CCSCOPE_RETURN_IF_ERROR(enqueueAndDrain(b_, in_place, iters, cfg_.timeout_s, &skip_next_));
    p.back_to_back_ns += core::nowNs() - t0;
    CCSCOPE_ASSIGN_OR_RETURN(double dev_us, deviceUs(0, 1));
    p.device_us += dev_us;
    return Status::ok();
  }
  // Device timing: marks on the GPU's stream; nothing for host buffers.
  Status mark(int index) { return b_.device() ? b_.device()->mark(index) : Status::ok(); }
  core::Result<double> deviceUs(int from, int to) {
    if (!b_.device()) return 0.0;
    return b_.device()->elapsedUs(from, to);
  }
  const BenchConfig& cfg_;
  CollectiveBackend& b_;
  std::vector<double> stats_;
  std::unique_ptr<BufferData> own_data_;
  BufferData* data_;
  Partial partial_[2];
  uint64_t uncaptured_count_[2] = {~uint64_t{0}, ~uint64_t{0}};  // -G: by placement

 public:
  bool skip_next_ = false;
};

void fillIdentity(reports::Measurement& m, const BenchConfig& cfg, CollectiveBackend& b,
                  const OpConfig& op, double factor) {
  m.collective = collectives::collectiveName(cfg.collective);
  m.algorithm = b.chosenAlgorithm();
  m.requested_algorithm = b.algorithm();
  m.note = b.choiceNote();
  m.transport = b.transport();
  m.ranks = b.size();
  m.count = op.plan ? op.plan->maxVolume() : op.count;
  m.bytes = m.count * core::dataTypeSize(op.dtype);
  m.root = op.collective == collectives::Collective::kBroadcast ? op.root : -1;
  m.dtype = core::dataTypeName(op.dtype);
  m.redop = collectives::isReduction(op.collective) ? core::reduceOpName(op.op) : "none";
  m.iters = cfg.iters;
  m.busbw_factor = factor;
  m.buffers = b.device() ? "cuda" : "host";
  m.path = b.dataPath();
  m.segment_bytes = b.segmentBytes();
  m.algbw_gbps = m.time_us > 0 ? static_cast<double>(m.bytes) / (m.time_us * 1e3) : 0;
  m.busbw_gbps = m.algbw_gbps * factor;
}

// One pair of buffers for the whole sweep: the first backend allocates it and the others share
// it where they can.
Status allocateRunners(const BenchConfig& cfg, const std::vector<CollectiveBackend*>& backends,
                       size_t need, DeviceDataFactory device_data,
                       std::vector<SizeRunner>& runners) {
  runners.reserve(backends.size());
  for (CollectiveBackend* b : backends) {
    if (b == backends.front() || !b->shareBuffers(*backends.front(), need))
      CCSCOPE_RETURN_IF_ERROR(b->allocate(need, cfg.host_pages));
    std::unique_ptr<BufferData> data;
    if (b->device() && !device_data)
      return Status(core::Code::kInternal, "device buffers and no way to fill them");
    if (b->device()) data = device_data(*b->device());
    runners.emplace_back(cfg, *b, std::move(data));
  }
  return Status::ok();
}

// The backend that takes the first turn at the first point. Every rank must take the same
// turns, so rank 0's draw is summed.
core::Result<int64_t> drawFirstTurn(const BenchConfig& cfg,
                                    const std::vector<CollectiveBackend*>& backends) {
  if (backends.size() <= 1 || cfg.first_turn >= 0) return std::max<int64_t>(cfg.first_turn, 0);
  const int64_t n = static_cast<int64_t>(backends.size());
  std::vector<int64_t> draw{backends.front()->rank() == 0 ? (core::nowNs() / 1000) % n : 0};
  CCSCOPE_RETURN_IF_ERROR(backends.front()->sumInts(draw, Deadline::afterSeconds(cfg.timeout_s)));
  return draw[0];
}

// Measures every point of a sweep on every backend, in turns. With several backends, each point
// is measured in two legs, the turns in one order and then in the reverse, each backend timing
// half of the iterations in each leg, so that every backend has one early and one late turn and
// a drift within the point (a shared machine's stalls late in a point) falls on all alike. The
// order also rotates: the point at index p starts with backend (first + p) mod n, so no backend is
// always first and last.
class TurnDriver {
 public:
  TurnDriver(const BenchConfig& cfg, std::vector<SizeRunner>& runners, reports::ResultSink& sink,
             int64_t first, int total)
      : cfg_(cfg),
        runners_(runners),
        sink_(sink),
        first_(first),
        total_(total),
        legs_(runners.size() > 1 ? 2 : 1),
        split_(legs_ == 1 ? cfg.iters : (cfg.iters + 1) / 2),
        start_(core::nowNs()) {}

  // One point on every backend; a row is written when its backend's last leg ends. cold: the
  // sweep's first point, where each backend runs its cold start.
  Status measurePoint(const OpConfig& op, bool cold, bool skip) {
    const size_t n = runners_.size();
    for (int leg = 0; leg < legs_; ++leg)
      for (size_t turn = 0; turn < n; ++turn) {
        SizeRunner& runner = runners_[(first_ + point_ + (leg == 0 ? turn : n - 1 - turn)) % n];
        if (leg == 0) CCSCOPE_RETURN_IF_ERROR(startTurn(runner, op, cold, skip));
        CCSCOPE_RETURN_IF_ERROR(measureTurn(runner, op, leg));
        if (leg == legs_ - 1) ++done_;
      }
    ++point_;
    return Status::ok();
  }

  reports::RunSummary finish() {
    summary_.avg_busbw_gbps = summary_.rows ? busbw_sum_ / summary_.rows : 0;
    sink_.onProgress(done_, total_, elapsedSeconds());
    return summary_;
  }

 private:
  double elapsedSeconds() const { return (core::nowNs() - start_) / 1e9; }

  Status startTurn(SizeRunner& runner, const OpConfig& op, bool cold, bool skip) {
    sink_.onProgress(done_, total_, elapsedSeconds());
    runner.skip_next_ = skip;
    CCSCOPE_RETURN_IF_ERROR(runner.backend().prepare(op));
    if (cold) CCSCOPE_RETURN_IF_ERROR(runner.coldStart());
    return Status::ok();
  }

  // One backend's leg at a point, out-of-place and then in place as configured.
  Status measureTurn(SizeRunner& runner, const OpConfig& op, int leg) {
    CollectiveBackend& b = runner.backend();
    auto geo = collectives::geometry(op.collective, op.count, b.size(), b.rank(), op.plan);
    for (bool in_place : {false, true}) {
      if (in_place ? !cfg_.in_place || !geo.in_place_supported : !cfg_.out_of_place) continue;
      CCSCOPE_RETURN_IF_ERROR(runner.warmup(in_place));
      CCSCOPE_RETURN_IF_ERROR(
          runner.measureLeg(op, in_place, leg == 0 ? 0 : split_, leg == 0 ? split_ : cfg_.iters));
      if (leg < legs_ - 1) continue;
      CCSCOPE_ASSIGN_OR_RETURN(reports::Measurement m, runner.finish(in_place));
      fillIdentity(m, cfg_, b, op, collectives::busbwFactor(cfg_.collective, b.size()));
      busbw_sum_ += m.busbw_gbps;
      summary_.wrong_total += std::max<int64_t>(0, m.wrong);
      ++summary_.rows;
      sink_.onMeasurement(m);
    }
    return Status::ok();
  }

  const BenchConfig& cfg_;
  std::vector<SizeRunner>& runners_;
  reports::ResultSink& sink_;
  const int64_t first_;
  const int total_;
  const int legs_;
  const int split_;  // the first leg's iterations
  const int64_t start_;
  size_t point_ = 0;
  int done_ = 0;
  double busbw_sum_ = 0;
  reports::RunSummary summary_;
};

}  // namespace

core::Result<size_t> bufferBytes(const BenchConfig& cfg, int ranks) {
  CCSCOPE_ASSIGN_OR_RETURN(std::vector<SizePlan> plans, planSizes(cfg, sweepSizes(cfg), ranks));
  return largestBuffer(plans);
}

core::Result<reports::RunSummary> runSweep(const BenchConfig& cfg,
                                           const std::vector<CollectiveBackend*>& backends,
                                           reports::ResultSink& sink,
                                           DeviceDataFactory device_data) {
  const int ranks = backends.front()->size(), rank = backends.front()->rank();
  std::vector<uint64_t> sizes = sweepSizes(cfg);
  CCSCOPE_ASSIGN_OR_RETURN(std::vector<SizePlan> plans, planSizes(cfg, sizes, ranks));
  std::vector<SizeRunner> runners;
  CCSCOPE_RETURN_IF_ERROR(
      allocateRunners(cfg, backends, largestBuffer(plans), device_data, runners));
  // Asked for huge pages and not given them: said once, above the figures it explains.
  if (std::string note = backends.front()->allocationNote(); !note.empty()) sink.onSection(note);
  CCSCOPE_ASSIGN_OR_RETURN(int64_t first, drawFirstTurn(cfg, backends));
  // Data-movement collectives have no reduction: one pass, reported as redop "none".
  std::vector<core::ReduceOp> ops = cfg.ops;
  if (!collectives::isReduction(cfg.collective)) ops.resize(1);
  const int total =
      static_cast<int>(sizes.size() * cfg.dtypes.size() * ops.size() * backends.size());
  TurnDriver driver(cfg, runners, sink, first, total);
  // Test-only fault injection (CCSCOPE_TESTONLY_MISMATCH) at the second size.
  const SizePlan* injected =
      cfg.mismatch_rank == rank ? &plans[std::min<size_t>(1, plans.size() - 1)] : nullptr;
  for (core::DataType dt : cfg.dtypes)
    for (core::ReduceOp rop : ops)
      for (const SizePlan& plan : plans) {
        const bool inject = &plan == injected;
        uint64_t count =
            collectives::roundCount(cfg.collective, plan.bytes / core::dataTypeSize(dt), ranks);
        CCSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<collectives::AlltoallvPlan> a2av,
                                 alltoallvPlan(cfg, ranks, count));
        if (inject && cfg.mismatch_kind == "count") count += ranks;
        OpConfig op{cfg.collective, count, dt, rop, cfg.root, a2av.get()};
        const bool cold = &plan == &plans.front() && dt == cfg.dtypes.front() && rop == ops.front();
        CCSCOPE_RETURN_IF_ERROR(
            driver.measurePoint(op, cold, inject && cfg.mismatch_kind == "skip"));
      }
  return driver.finish();
}

}  // namespace ccscope::bench
