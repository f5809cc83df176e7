#include "collectives/schedule_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ccscope::collectives {

using core::Code;
using core::Status;

namespace {
constexpr size_t kMaxSegmentBytes = 1 << 20;
constexpr size_t kAuxElems = 4096;  // statistics vectors reduced by the harness
}  // namespace

core::Result<std::unique_ptr<ScheduleBackend>> ScheduleBackend::create(transports::Transport& t,
                                                                       const AlgorithmOptions& o) {
  std::unique_ptr<ScheduleBackend> b(new ScheduleBackend(t, o));
  if (o.algorithm != "auto" &&
      !std::any_of(allAlgorithms().begin(), allAlgorithms().end(),
                   [&](const AlgorithmInfo& a) { return o.algorithm == a.name; }))
    return Status(Code::kInvalidArgument, fmt::format("unknown algorithm '{}'", o.algorithm));
  b->aux_.buf = core::HostBuffer(2 * kAuxElems * sizeof(double) + 4096);
  CCSCOPE_ASSIGN_OR_RETURN(b->aux_.reg, t.registerMemory(b->aux_.buf.data(), b->aux_.buf.size()));
  b->barrier_sched_ = barrierSchedule(t.rank(), t.size());
  b->barrier_exec_.prepare(b->barrier_sched_, core::DataType::kUint8, core::ReduceOp::kSum, 1);
  if (o.algorithm == "auto") {
    auto* raw = b.get();
    const double limit = o.timeout_s;
    auto max_over_ranks = [raw, limit](std::span<double> v) {
      return raw->maxDoubles(v, core::Deadline::afterSeconds(limit));
    };
    auto cal = calibrate(t, o.host_pages, max_over_ranks, core::Deadline::afterSeconds(limit));
    if (!cal) return cal.takeStatus().prepend("calibrating --algo auto");
    b->calibration_ = *cal;
  }
  return b;
}

std::string ScheduleBackend::setupNote() const {
  if (opts_.algorithm != "auto") return "";
  const CostParams& c = calibration_.cost;
  return fmt::format(
      "auto: cost model calibrated in {:.2f} s: alpha {:.2f} us, beta {:.3f} ns/B, "
      "gamma {:.3f} ns/B",
      calibration_.seconds, c.alpha * 1e6, c.beta * 1e9, c.gamma * 1e9);
}

Status ScheduleBackend::allocate(size_t max_bytes, core::HostPages pages) {
  size_t bytes = std::max<size_t>(max_bytes, 64);
  pages_ = pages;
  for (auto* which : {&send_, &recv_}) {
    auto rb = std::make_shared<RegisteredBuffer>();
    CCSCOPE_ASSIGN_OR_RETURN(rb->buf, core::HostBuffer::allocate(bytes, pages));
    CCSCOPE_ASSIGN_OR_RETURN(rb->reg, t_.registerMemory(rb->buf.data(), rb->buf.size()));
    *which = std::move(rb);
  }
  return Status::ok();
}

bool ScheduleBackend::shareBuffers(CollectiveBackend& other, size_t max_bytes) {
  auto* o = dynamic_cast<ScheduleBackend*>(&other);
  // Registered with the same transport: its memory regions are valid here as they are.
  if (!o || &o->t_ != &t_ || !o->send_ || o->send_->buf.size() < std::max<size_t>(max_bytes, 64))
    return false;
  pages_ = o->pages_;
  send_ = o->send_;
  recv_ = o->recv_;
  return true;
}

std::string ScheduleBackend::allocationNote() const {
  if (!send_) return "";
  return core::hugePageShortfall({&send_->buf, &recv_->buf}, pages_);
}

// Scratch grows (outside any timed loop) to what the largest prepared schedule needs.
Status ScheduleBackend::ensureScratch(size_t bytes) {
  if (bytes <= scratch_.buf.size() && scratch_.buf.data()) return Status::ok();
  scratch_.reg.reset();
  CCSCOPE_ASSIGN_OR_RETURN(scratch_.buf,
                           core::HostBuffer::allocate(std::max<size_t>(bytes, 4096), pages_));
  CCSCOPE_ASSIGN_OR_RETURN(scratch_.reg,
                           t_.registerMemory(scratch_.buf.data(), scratch_.buf.size()));
  return Status::ok();
}

uint64_t ScheduleBackend::segmentElems(const OpConfig& cfg) const {
  size_t elem = core::dataTypeSize(cfg.dtype);
  size_t chunk_bytes = cfg.count * elem / std::max(1, size());
  // Two segments per chunk already overlap reduction with transfer; more segments only add
  // per-message cost, most of all when oversubscribed (docs/performance.md, "Allreduce ring vs
  // Open MPI").
  size_t min_seg = t_.caps().min_segment_bytes * (t_.oversubscribed() ? 2 : 1);
  size_t seg_bytes = opts_.segment_bytes ? opts_.segment_bytes
                                         : std::clamp(chunk_bytes / 2, min_seg,
                                                      std::max(min_seg, kMaxSegmentBytes));
  return std::max<size_t>(1, seg_bytes / elem);
}

Status ScheduleBackend::prepare(const OpConfig& cfg) {
  const AlgorithmInfo* algo = nullptr;
  if (opts_.algorithm == "auto") {
    double bytes = static_cast<double>(cfg.plan ? cfg.plan->maxVolume() : cfg.count) *
                   static_cast<double>(core::dataTypeSize(cfg.dtype));
    CCSCOPE_ASSIGN_OR_RETURN(Corrections * measured, corrections(cfg));
    Choice ch = choose(cfg.collective, size(), bytes, calibration_.cost, measured);
    // Close candidates are timed at this very size, as the rows will run it (not with an
    // all-to-allv plan or a broadcast root other than 0: timeAlgorithm runs neither).
    if (!cfg.plan && (cfg.collective != Collective::kBroadcast || cfg.root == 0)) {
      CCSCOPE_RETURN_IF_ERROR(timeClose(
          ch, cfg.collective, closeCandidates(ch),
          [&](const AlgorithmInfo& a, int iters) {
            return timeAlgorithm(a, cfg, cfg.count, iters);
          },
          [&](std::span<double> v) {
            return maxDoubles(v, core::Deadline::afterSeconds(opts_.timeout_s));
          }));
      // The next sizes start from what was timed here (every rank learns the same: the times
      // are the slowest rank's).
      measured->learn(bytes, ch.timed_s, [&](std::string_view name) {
        const AlgorithmInfo* a = findAlgorithm(cfg.collective, name);
        return a ? a->cost(size(), bytes, calibration_.cost) : 0.0;
      });
    }
    algo = ch.algo;
    choice_note_ =
        fmt::format("auto picked {} (model calibrated in {:.2f} s, {} sizes measured): {}",
                    algo ? algo->name : "?", calibration_.seconds + measured->seconds,
                    measured->bytes.size(), ch.explain());
  } else {
    algo = findAlgorithm(cfg.collective, opts_.algorithm);
  }
  if (!algo)
    return Status(Code::kInvalidArgument, fmt::format("no algorithm '{}' for {}", opts_.algorithm,
                                                      collectiveName(cfg.collective)));
  size_t elem = core::dataTypeSize(cfg.dtype);
  geo_ = geometry(cfg.collective, cfg.count, size(), rank(), cfg.plan);
  if (!send_ || std::max(geo_.in_elems, geo_.out_elems) * elem > send_->buf.size())
    return Status(Code::kInternal, "prepare() beyond the allocated buffers");
  ScheduleParams p{
      cfg.collective, rank(),  size(), cfg.count, segmentElems(cfg), cfg.op == core::ReduceOp::kAvg,
      cfg.root,       cfg.plan};
  sched_ = algo->build(p);
  CCSCOPE_RETURN_IF_ERROR(ensureScratch(sched_.scratch_elems * elem));
  exec_.prepare(sched_, cfg.dtype, cfg.op);
  elem_ = elem;
  cfg_ = cfg;
  algo_name_ = algo->name;  // static: flight records may outlive this backend
  return Status::ok();
}

core::Result<double> ScheduleBackend::timeAlgorithm(const AlgorithmInfo& a, const OpConfig& cfg,
                                                    uint64_t count, int iters) {
  OpConfig op = cfg;
  op.collective = a.collective;
  op.count = count;
  op.root = 0;
  op.plan = nullptr;
  const size_t elem = core::dataTypeSize(cfg.dtype);
  ScheduleParams p{
      a.collective, rank(), size(), count, segmentElems(op), cfg.op == core::ReduceOp::kAvg, 0,
      nullptr};
  calib_sched_ = a.build(p);
  CCSCOPE_RETURN_IF_ERROR(ensureScratch(calib_sched_.scratch_elems * elem));
  exec_.prepare(calib_sched_, cfg.dtype, cfg.op);
  const Buffers b{send_->reg.region(), recv_->reg.region(), scratch_.reg.region()};
  auto deadline = [&] { return core::Deadline::afterSeconds(opts_.timeout_s); };
  auto context = [&] {
    return fmt::format("auto measuring {} {} at {} B", collectiveName(a.collective), a.name,
                       count * elem);
  };
  // Recorded like the measured runs: a hang while calibrating shows in the flight recorder.
  auto once = [&] {
    Status s = runRecorded(exec_, b, collectiveName(a.collective), a.name,
                           core::dataTypeName(cfg.dtype), count * elem, deadline());
    return s.isOk() ? s : s.prepend(context());
  };
  CCSCOPE_RETURN_IF_ERROR(once());
  CCSCOPE_RETURN_IF_ERROR(barrier(deadline()));
  int64_t t0 = core::nowNs();
  for (int i = 0; i < iters; ++i) CCSCOPE_RETURN_IF_ERROR(once());
  return (core::nowNs() - t0) / 1e9 / iters;
}

core::Result<Corrections*> ScheduleBackend::corrections(const OpConfig& cfg) {
  const std::tuple<int, int, int> key{static_cast<int>(cfg.collective), static_cast<int>(cfg.dtype),
                                      isReduction(cfg.collective) ? static_cast<int>(cfg.op) : -1};
  if (auto it = corrections_.find(key); it != corrections_.end()) return &it->second;
  auto m = measureCandidates(
      cfg.collective, size(), core::dataTypeSize(cfg.dtype), send_->buf.size(), calibration_.cost,
      [&](const AlgorithmInfo& a, uint64_t count, int iters) {
        return timeAlgorithm(a, cfg, count, iters);
      },
      [&](std::span<double> v) {
        return maxDoubles(v, core::Deadline::afterSeconds(opts_.timeout_s));
      });
  if (!m) return m.takeStatus().prepend("calibrating --algo auto");
  // Developer aid: what auto measured, in us per operation at each anchor size.
  if (rank() == 0 && std::getenv("CCSCOPE_AUTO_TABLE"))
    std::fprintf(stderr, "auto measured %s:\n%s\n", collectiveName(cfg.collective),
                 m->table.c_str());
  return &corrections_.emplace(key, std::move(*m)).first->second;
}

Status ScheduleBackend::run(bool in_place, core::Deadline deadline) {
  Buffers b{send_->reg.region(), recv_->reg.region(), scratch_.reg.region()};
  if (in_place) {
    CCSCOPE_ASSIGN_OR_RETURN(b.input, recv_->reg.region().from(geo_.in_place_in_offset * elem_));
    CCSCOPE_ASSIGN_OR_RETURN(b.output, recv_->reg.region().from(geo_.in_place_out_offset * elem_));
  }
  return runRecorded(exec_, b, collectiveName(cfg_.collective), algo_name_,
                     core::dataTypeName(cfg_.dtype), cfg_.count * elem_, deadline);
}

Status ScheduleBackend::runRecorded(Executor& ex, const Buffers& b, const char* op,
                                    const char* algo, const char* dtype, uint64_t bytes,
                                    core::Deadline deadline) {
  if (!recorder_) return ex.run(t_, b, deadline);
  core::FlightEntry& fe =
      recorder_->begin(op, algo, dtype, bytes, static_cast<uint32_t>(ex.opCount()));
  Status s = ex.run(t_, b, deadline, &fe);
  core::FlightRecorder::end(fe, s.isOk());
  return s;
}

Status ScheduleBackend::barrier(core::Deadline deadline) {
  const transports::MemoryRegion& aux = aux_.reg.region();
  Buffers b{aux, aux, aux};
  return runRecorded(barrier_exec_, b, core::kHarnessBarrier, "dissemination", "none", 0, deadline)
      .prepend("harness barrier");
}

Status ScheduleBackend::smallAllreduce(void* data, size_t count, core::DataType dt,
                                       core::ReduceOp op, core::Deadline deadline) {
  // Vectors longer than the aux buffer (one latency sample per iteration with -n 20000) are
  // reduced a buffer-full at a time; every rank passes the same count, so the chunks line up.
  const size_t elem = core::dataTypeSize(dt);
  const size_t per_chunk = kAuxElems * sizeof(double) / elem;
  auto* bytes_at = static_cast<unsigned char*>(data);
  size_t done = 0;
  do {
    const size_t n = std::min(per_chunk, count - done);
    std::memcpy(aux_.buf.data(), bytes_at + done * elem, n * elem);
    Schedule s = ringAllreduceSchedule(rank(), size(), n, n + 1, false);
    aux_exec_.prepare(s, dt, op, 1);
    const transports::MemoryRegion& in = aux_.reg.region();
    CCSCOPE_ASSIGN_OR_RETURN(transports::MemoryRegion scratch, in.from(kAuxElems * sizeof(double)));
    CCSCOPE_RETURN_IF_ERROR(runRecorded(aux_exec_, Buffers{in, in, scratch}, "allreduce",
                                        core::kHarnessReduction, core::dataTypeName(dt), n * elem,
                                        deadline)
                                .prepend("harness statistics reduction"));
    std::memcpy(bytes_at + done * elem, aux_.buf.data(), n * elem);
    done += n;
  } while (done < count);
  return Status::ok();
}

Status ScheduleBackend::maxDoubles(std::span<double> v, core::Deadline deadline) {
  return smallAllreduce(v.data(), v.size(), core::DataType::kDouble, core::ReduceOp::kMax,
                        deadline);
}

Status ScheduleBackend::sumInts(std::span<int64_t> v, core::Deadline deadline) {
  return smallAllreduce(v.data(), v.size(), core::DataType::kInt64, core::ReduceOp::kSum, deadline);
}

}  // namespace ccscope::collectives
