#include "bench/sweep.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "bench/collective_desc.h"
#include "bench/stats.h"

namespace ccscope::bench {

using collectives::CollectiveBackend;
using collectives::OpConfig;
using core::Deadline;
using core::Status;

namespace {

class SizeRunner {
 public:
  SizeRunner(const BenchConfig& cfg, CollectiveBackend& b, const CollectiveDesc& d)
      : cfg_(cfg), b_(b), desc_(d), stats_(cfg.iters + 1) {}

  Deadline opDeadline() const { return Deadline::afterSeconds(cfg_.timeout_s); }

  core::Result<int64_t> check(const OpConfig& op, bool in_place) {
    if (cfg_.checks == 0) return int64_t{-1};
    int64_t wrong = 0;
    for (int c = 0; c < cfg_.checks; ++c) {
      desc_.fill(op.dtype, op.op, b_.rank(), b_.size(), op.count,
                 in_place ? b_.recvBuffer() : b_.sendBuffer());
      if (b_.rank() == cfg_.corrupt_rank && c == 0) b_.corruptNextResult();
      CCSCOPE_RETURN_IF_ERROR(b_.run(in_place, opDeadline()));
      wrong += desc_.count_wrong(op.dtype, op.op, b_.size(), op.count, b_.recvBuffer());
    }
    std::vector<int64_t> w{wrong};
    CCSCOPE_RETURN_IF_ERROR(b_.sumInts(w, opDeadline()));
    return w[0];
  }

  core::Result<reports::Measurement> measure(const OpConfig& op, bool in_place) {
    reports::Measurement m;
    CCSCOPE_ASSIGN_OR_RETURN(m.wrong, check(op, in_place));
    // Back-to-back iterations: the mean per operation (what nccl-tests reports).
    CCSCOPE_RETURN_IF_ERROR(b_.barrier(opDeadline()));
    int64_t t0 = core::nowNs();
    for (int i = 0; i < cfg_.iters; ++i) CCSCOPE_RETURN_IF_ERROR(b_.run(in_place, opDeadline()));
    stats_[0] = (core::nowNs() - t0) / 1e3 / cfg_.iters;
    // Barrier-separated iterations: the per-iteration distribution.
    for (int i = 0; i < cfg_.iters; ++i) {
      CCSCOPE_RETURN_IF_ERROR(b_.barrier(opDeadline()));
      int64_t s = core::nowNs();
      CCSCOPE_RETURN_IF_ERROR(b_.run(in_place, opDeadline()));
      stats_[i + 1] = (core::nowNs() - s) / 1e3;
    }
    CCSCOPE_RETURN_IF_ERROR(b_.maxDoubles(stats_, opDeadline()));
    m.time_us = stats_[0];
    m.lat = latencyStats(std::vector<double>(stats_.begin() + 1, stats_.end()));
    m.in_place = in_place;
    return m;
  }

  Status warmup(bool in_place) {
    for (int i = 0; i < cfg_.warmup; ++i) CCSCOPE_RETURN_IF_ERROR(b_.run(in_place, opDeadline()));
    return Status::ok();
  }

 private:
  const BenchConfig& cfg_;
  CollectiveBackend& b_;
  const CollectiveDesc& desc_;
  std::vector<double> stats_;
};

void fillIdentity(reports::Measurement& m, const BenchConfig& cfg, CollectiveBackend& b,
                  const OpConfig& op, double factor) {
  m.collective = collectives::collectiveName(cfg.collective);
  m.algorithm = b.algorithm();
  m.transport = b.transport();
  m.ranks = b.size();
  m.count = op.count;
  m.bytes = op.count * core::dataTypeSize(op.dtype);
  m.dtype = core::dataTypeName(op.dtype);
  m.redop = core::reduceOpName(op.op);
  m.iters = cfg.iters;
  m.busbw_factor = factor;
  m.algbw_gbps = m.time_us > 0 ? static_cast<double>(m.bytes) / (m.time_us * 1e3) : 0;
  m.busbw_gbps = m.algbw_gbps * factor;
}

}  // namespace

core::Result<reports::RunSummary> runSweep(const BenchConfig& cfg, CollectiveBackend& backend,
                                           reports::ResultSink& sink) {
  const CollectiveDesc& desc = describe(cfg.collective);
  std::vector<uint64_t> sizes = sweepSizes(cfg);
  CCSCOPE_RETURN_IF_ERROR(backend.allocate(sizes.empty() ? 0 : sizes.back()));
  SizeRunner runner(cfg, backend, desc);
  reports::RunSummary summary;
  double busbw_sum = 0;
  int total = static_cast<int>(sizes.size() * cfg.dtypes.size() * cfg.ops.size()), done = 0;
  int64_t start = core::nowNs();
  for (core::DataType dt : cfg.dtypes)
    for (core::ReduceOp rop : cfg.ops)
      for (uint64_t bytes : sizes) {
        sink.onProgress(done, total, (core::nowNs() - start) / 1e9);
        OpConfig op{cfg.collective, bytes / core::dataTypeSize(dt), dt, rop};
        CCSCOPE_RETURN_IF_ERROR(backend.prepare(op));
        for (bool in_place : {false, true}) {
          CCSCOPE_RETURN_IF_ERROR(runner.warmup(in_place));
          CCSCOPE_ASSIGN_OR_RETURN(reports::Measurement m, runner.measure(op, in_place));
          fillIdentity(m, cfg, backend, op, desc.busbw_factor(backend.size()));
          busbw_sum += m.busbw_gbps;
          summary.wrong_total += std::max<int64_t>(0, m.wrong);
          ++summary.rows;
          sink.onMeasurement(m);
        }
        ++done;
      }
  summary.avg_busbw_gbps = summary.rows ? busbw_sum / summary.rows : 0;
  sink.onProgress(done, total, (core::nowNs() - start) / 1e9);
  return summary;
}

}  // namespace ccscope::bench
