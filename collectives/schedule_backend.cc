#include "collectives/schedule_backend.h"

#include <fmt/format.h>

#include <algorithm>

namespace ccscope::collectives {

using core::Code;
using core::Status;

core::Result<std::unique_ptr<ScheduleBackend>> ScheduleBackend::create(transports::Transport& t,
                                                                       const AlgorithmOptions& o,
                                                                       HarnessChannel* harness) {
  std::unique_ptr<ScheduleBackend> b(new ScheduleBackend(t, o));
  if (o.algorithm != "auto" &&
      !std::any_of(allAlgorithms().begin(), allAlgorithms().end(),
                   [&](const AlgorithmInfo& a) { return o.algorithm == a.name; }))
    return Status(Code::kInvalidArgument, fmt::format("unknown algorithm '{}'", o.algorithm));
  if (o.device) {
    if (!t.caps().memory_kinds.has(transports::MemoryKind::kCuda))
      return Status(Code::kUnsupported, fmt::format("{} moves {} memory, not device buffers",
                                                    t.name(), t.caps().memory_kinds.names()));
    b->bufs_.setDevice(o.device);
    b->exec_.setCompute(&o.device->compute());
  }
  if (!harness) {
    CCSCOPE_ASSIGN_OR_RETURN(b->own_harness_, HarnessChannel::sharing(t));
  }
  b->harness_ = harness ? harness : b->own_harness_.get();
  if (o.algorithm == "auto") {
    CCSCOPE_ASSIGN_OR_RETURN(
        b->policy_, AutoPolicy::create(t, *b->harness_, o.host_pages, o.timeout_s, o.device));
  }
  CCSCOPE_RETURN_IF_ERROR(b->measureSegmentCost());
  return b;
}

// On device buffers the default segment follows the transport's measured per-message cost
// (measuredSegmentBytes): auto's calibration where it ran, else the same ring shift here.
Status ScheduleBackend::measureSegmentCost() {
  if (!opts_.device || opts_.segment_bytes || t_.size() < 2) return Status::ok();
  if (policy_) {
    seg_cost_ = policy_->calibration().cost;
    return Status::ok();
  }
  auto cal = calibrate(
      t_, opts_.host_pages,
      [&](std::span<double> v) {
        return harness_->maxDoubles(v, core::Deadline::afterSeconds(opts_.timeout_s));
      },
      core::Deadline::afterSeconds(opts_.timeout_s), opts_.device);
  if (!cal) return cal.takeStatus().prepend("measuring the transport's per-message cost");
  seg_cost_ = cal->cost;
  return Status::ok();
}

std::string ScheduleBackend::setupNote() const {
  std::string note = policy_ ? policy_->setupNote() : "";
  if (seg_cost_)
    note += fmt::format(
        "{}segments: sqrt(chunk x alpha / beta) from {}'s measured cost on "
        "device buffers: alpha {:.2f} us per message, {:.1f} GB/s",
        note.empty() ? "" : "\n", t_.name(), seg_cost_->alpha * 1e6,
        1e-9 / std::max(seg_cost_->beta, 1e-15));
  if (std::string t = t_.setupNote(); !t.empty()) note += (note.empty() ? "" : "\n") + t;
  if (!t_.caps().verifies_tags)
    note += fmt::format(
        "{}{} does not verify message tags: a rank one collective ahead of its peers shows only "
        "as wrong data (keep -c on)",
        note.empty() ? "" : "\n", t_.name());
  return note;
}

void ScheduleBackend::setFlightRecorder(core::FlightRecorder* r) {
  recorder_ = r;
  if (own_harness_) own_harness_->setFlightRecorder(r);
}

bool ScheduleBackend::shareBuffers(CollectiveBackend& other, size_t max_bytes) {
  auto* o = dynamic_cast<ScheduleBackend*>(&other);
  return o && bufs_.share(o->bufs_, max_bytes);
}

uint64_t ScheduleBackend::segmentElems(const OpConfig& cfg) const {
  size_t elem = core::dataTypeSize(cfg.dtype);
  size_t chunk_bytes = cfg.count * elem / std::max(1, size());
  // More segments only add per-message cost, most of all when oversubscribed
  // (docs/performance.md, "Allreduce ring vs Open MPI").
  size_t seg_bytes =
      opts_.segment_bytes ? opts_.segment_bytes
      : seg_cost_
          ? measuredSegmentBytes(chunk_bytes, *seg_cost_, t_.caps().min_segment_bytes)
          : defaultSegmentBytes(chunk_bytes, t_.caps().min_segment_bytes, t_.oversubscribed());
  return std::max<size_t>(1, seg_bytes / elem);
}

Status ScheduleBackend::prepare(const OpConfig& cfg) {
  if (!bufs_.allocated()) return Status(Code::kInternal, "prepare() before allocate()");
  const AlgorithmInfo* algo = nullptr;
  if (policy_) {
    CCSCOPE_ASSIGN_OR_RETURN(algo, policy_->choose(cfg, bufs_.capacity(), *this));
  } else {
    algo = findAlgorithm(cfg.collective, opts_.algorithm);
  }
  if (!algo)
    return Status(Code::kInvalidArgument, fmt::format("no algorithm '{}' for {}", opts_.algorithm,
                                                      collectiveName(cfg.collective)));
  size_t elem = core::dataTypeSize(cfg.dtype);
  geo_ = geometry(cfg.collective, cfg.count, size(), rank(), cfg.plan);
  if (std::max(geo_.in_elems, geo_.out_elems) * elem > bufs_.capacity())
    return Status(Code::kInternal, "prepare() beyond the allocated buffers");
  ScheduleParams p{
      cfg.collective, rank(),  size(), cfg.count, segmentElems(cfg), cfg.op == core::ReduceOp::kAvg,
      cfg.root,       cfg.plan};
  sched_ = algo->build(p);
  segment_bytes_ = p.segment_elems * elem;
  CCSCOPE_RETURN_IF_ERROR(bufs_.ensureScratch(sched_.scratch_elems * elem));
  exec_.prepare(sched_, cfg.dtype, cfg.op);
  elem_ = elem;
  cfg_ = cfg;
  algo_name_ = algo->name;  // static: flight records may outlive this backend
  return Status::ok();
}

Status ScheduleBackend::bindCandidate(const Schedule& s, const OpConfig& cfg) {
  CCSCOPE_RETURN_IF_ERROR(bufs_.ensureScratch(s.scratch_elems * core::dataTypeSize(cfg.dtype)));
  exec_.prepare(s, cfg.dtype, cfg.op);
  return Status::ok();
}

Status ScheduleBackend::runCandidate(const AlgorithmInfo& algo, const OpConfig& cfg,
                                     core::Deadline deadline) {
  return runRecorded(bufs_.regions(), collectiveName(algo.collective), algo.name,
                     core::dataTypeName(cfg.dtype), cfg.count * core::dataTypeSize(cfg.dtype),
                     deadline);
}

Status ScheduleBackend::run(bool in_place, core::Deadline deadline) {
  Buffers b = bufs_.regions();
  if (in_place) {
    CCSCOPE_ASSIGN_OR_RETURN(
        b, bufs_.inPlace(geo_.in_place_in_offset * elem_, geo_.in_place_out_offset * elem_));
  }
  return runRecorded(b, collectiveName(cfg_.collective), algo_name_, core::dataTypeName(cfg_.dtype),
                     cfg_.count * elem_, deadline);
}

Status ScheduleBackend::runRecorded(const Buffers& b, const char* op, const char* algo,
                                    const char* dtype, uint64_t bytes, core::Deadline deadline) {
  return exec_.runRecorded(t_, b, deadline, recorder_, op, algo, dtype, bytes);
}

Status ScheduleBackend::barrier(core::Deadline deadline) { return harness_->barrier(deadline); }

Status ScheduleBackend::maxDoubles(std::span<double> v, core::Deadline deadline) {
  return harness_->maxDoubles(v, deadline);
}

Status ScheduleBackend::sumInts(std::span<int64_t> v, core::Deadline deadline) {
  return harness_->sumInts(v, deadline);
}

}  // namespace ccscope::collectives
