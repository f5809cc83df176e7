#include "collectives/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace ccscope::collectives {

using core::Code;
using core::Status;
using transports::Request;

struct Executor::Run {
  transports::Transport& t;
  const Buffers& bufs;
  core::Deadline deadline;
  core::FlightEntry* fe;
};

void Executor::prepare(const Schedule& s, core::DataType dtype, core::ReduceOp op,
                       uint32_t channel) {
  sched_ = &s;
  bound_transport_ = nullptr;  // the compute backend binds to the new dtype and op
  channel_ = channel;
  dtype_ = dtype;
  op_ = op;
  elem_ = core::dataTypeSize(dtype);
  const size_t n = s.ops.size();
  remaining_.assign(n, 0);
  ready_.assign(n, 0);
  finished_.assign(n, 0);
  local_queue_.clear();
  local_queue_.reserve(n);
  lanes_.assign(2 * static_cast<size_t>(s.ranks), {});
  lane_of_.assign(n, UINT32_MAX);
  for (uint32_t i = 0; i < n; ++i) {
    const Op& o = s.ops[i];
    if (o.kind != OpKind::kSend && o.kind != OpKind::kRecv) continue;
    uint32_t lane = static_cast<uint32_t>(2 * o.peer + (o.kind == OpKind::kRecv));
    lane_of_[i] = lane;
    lanes_[lane].push_back(i);
  }
  lane_cursor_.assign(lanes_.size(), 0);
  lane_inflight_.assign(lanes_.size(), 0);
  req_of_op_.assign(n, Request{});
  posted_.clear();
  posted_.reserve(n);
  // The corruption hook flips an element this rank's output receives, once the collective has
  // finished: whatever wrote it last, the result is then wrong, for every schedule and size.
  corrupt_op_ = UINT32_MAX;
  for (uint32_t i = 0; i < n; ++i) {
    const Op& o = s.ops[i];
    if (o.kind != OpKind::kSend && o.count > 0 && o.dst.buf == Buf::kOutput) corrupt_op_ = i;
  }
}

const transports::MemoryRegion& Executor::region(const Buffers& bufs, Buf b) const {
  return b == Buf::kInput ? bufs.input : b == Buf::kOutput ? bufs.output : bufs.scratch;
}

char* Executor::addr(const Buffers& bufs, const Span& s, uint64_t count) const {
  const transports::MemoryRegion& mr = region(bufs, s.buf);
  const uint64_t off = s.offset * elem_, len = count * elem_;
  return mr.contains(off, len) ? mr.base() + off : nullptr;
}

void Executor::onReady(uint32_t op) {
  ready_[op] = 1;
  if (lane_of_[op] == UINT32_MAX) local_queue_.push_back(op);
}

void Executor::markDone(uint32_t op) {
  ++done_;
  const Op& o = sched_->ops[op];
  for (uint32_t k = 0; k < o.next_count; ++k) {
    uint32_t d = sched_->dependents[o.next_begin + k];
    if (--remaining_[d] == 0) onReady(d);
  }
}

Status Executor::begin(transports::Transport& t) {
  CCSCOPE_CHECK(sched_ != nullptr, "Executor::run before prepare");
  if (!t.connected())
    return Status(Code::kInvalidArgument, fmt::format("{} transport not connected", t.name()));
  // What the transport and the compute backend say is read once per pairing, not per run: an
  // 8-byte allreduce takes a microsecond or two.
  if (&t != bound_transport_ || compute_ != bound_compute_ ||
      op_of_slot_.size() != t.requests().capacity()) {
    stream_ordered_ = t.caps().stream_ordered;
    if (stream_ordered_ && !compute_->streamOrdered())
      return Status(Code::kInvalidArgument,
                    fmt::format("{} orders operations on a stream, and the {} compute backend "
                                "does not",
                                t.name(), compute_->name()));
    window_ = t.inflightPerPeer();
    const uint32_t cap = t.requests().capacity();
    op_of_slot_.assign(cap, UINT32_MAX);
    gen_of_slot_.assign(cap, 0);
    CCSCOPE_RETURN_IF_ERROR(compute_->bind(dtype_, op_, sched_->ranks));
    bound_transport_ = &t;
    bound_compute_ = compute_;
  }
  done_ = inflight_ = local_pending_ = finished_count_ = 0;
  std::fill(ready_.begin(), ready_.end(), 0);
  std::fill(finished_.begin(), finished_.end(), 0);
  std::fill(lane_cursor_.begin(), lane_cursor_.end(), 0);
  std::fill(lane_inflight_.begin(), lane_inflight_.end(), 0);
  local_queue_.clear();
  posted_.clear();
  posted_head_ = 0;
  const auto& ops = sched_->ops;
  for (uint32_t i = 0; i < ops.size(); ++i) {
    remaining_[i] = ops[i].dep_count;
    if (remaining_[i] == 0) onReady(i);
  }
  return Status::ok();
}

Status Executor::postComm(Run& r, uint32_t op) {
  const Op& o = sched_->ops[op];
  // Top bit: channel; next 7 bits: the call number, so a rank one collective ahead of its peer
  // is caught as a tag mismatch; low 24 bits: the message's index in the schedule.
  uint32_t tag =
      (channel_ << 31) | (static_cast<uint32_t>(calls_ & 0x7f) << 24) | (o.tag & 0xffffff);
  const Span& sp = o.kind == OpKind::kSend ? o.a : o.dst;
  const transports::MemoryRegion& mr = region(r.bufs, sp.buf);
  size_t off = sp.offset * elem_, len = o.count * elem_;
  auto q = o.kind == OpKind::kSend ? r.t.postSend(o.peer, tag, mr, off, len)
                                   : r.t.postRecv(o.peer, tag, mr, off, len);
  if (!q) return q.takeStatus();
  req_of_op_[op] = *q;
  op_of_slot_[q->slot] = op;
  gen_of_slot_[q->slot] = q->gen;
  posted_.push_back(op);
  ++inflight_;
  ++lane_inflight_[lane_of_[op]];
  if (stream_ordered_) markDone(op);  // the stream orders what depends on it
  return Status::ok();
}

Status Executor::postReadyComms(Run& r) {
  bool batch = false;
  for (size_t lane = 0; lane < lanes_.size(); ++lane) {
    const auto& order = lanes_[lane];
    uint32_t& cur = lane_cursor_[lane];
    while (cur < order.size() && ready_[order[cur]] && lane_inflight_[lane] < window_) {
      if (!batch) r.t.beginBatch();
      batch = true;
      if (Status s = postComm(r, order[cur++]); !s.isOk()) {
        r.t.endBatch().ignore();  // the post's failure is the one to report
        return s;
      }
    }
  }
  return batch ? r.t.endBatch() : Status::ok();
}

Status Executor::startLocal(Run& r, uint32_t op) {
  const Op& o = sched_->ops[op];
  const bool reads_a = o.kind == OpKind::kReduce || o.kind == OpKind::kCopy;
  const bool reads_b = o.kind == OpKind::kReduce;
  LocalStep step{o.kind, addr(r.bufs, o.dst, o.count),
                 reads_a ? addr(r.bufs, o.a, o.count) : nullptr,
                 reads_b ? addr(r.bufs, o.b, o.count) : nullptr, o.count};
  if (!step.dst || (reads_a && !step.a) || (reads_b && !step.b))
    return Status(Code::kInternal,
                  fmt::format("local step {} of {} overruns its buffers", op, sched_->ops.size()));
  CCSCOPE_ASSIGN_OR_RETURN(bool finished, compute_->start(step, op));
  if (finished) {
    finished_[op] = 1;
    ++finished_count_;
    markDone(op);
    return Status::ok();
  }
  ++local_pending_;
  if (stream_ordered_) markDone(op);
  return Status::ok();
}

Status Executor::reap(Run& r) {
  transports::RequestTable& table = r.t.requests();
  Request q;
  while (table.nextFinished(&q)) {
    const uint32_t op = op_of_slot_[q.slot];
    if (op == UINT32_MAX || gen_of_slot_[q.slot] != q.gen) continue;  // another caller's
    op_of_slot_[q.slot] = UINT32_MAX;
    Status s = table.release(q);
    finished_[op] = 1;
    ++finished_count_;
    --inflight_;
    --lane_inflight_[lane_of_[op]];
    if (!s.isOk()) return s;
    if (!stream_ordered_) markDone(op);
  }
  uint32_t token = 0;
  while (compute_->nextFinished(&token)) {
    finished_[token] = 1;
    ++finished_count_;
    --local_pending_;
    if (!stream_ordered_) markDone(token);
  }
  return compute_->takeError();
}

Request Executor::oldestOutstanding() {
  while (posted_head_ < posted_.size() && finished_[posted_[posted_head_]]) ++posted_head_;
  return posted_head_ < posted_.size() ? req_of_op_[posted_[posted_head_]] : Request{};
}

void Executor::recordStuckSend(transports::Transport& t, core::FlightEntry& fe) {
  const transports::RequestRecord* stuck = nullptr;
  for (size_t i = posted_head_; i < posted_.size(); ++i) {
    const uint32_t op = posted_[i];
    if (finished_[op] || t.requests().finished(req_of_op_[op])) continue;
    const transports::RequestRecord& rec = t.requests().at(req_of_op_[op]);
    if (rec.dir != transports::Dir::kSend) continue;
    if (!stuck || rec.last_progress_ns < stuck->last_progress_ns) stuck = &rec;
  }
  if (stuck) fe.sendStuck(stuck->peer, stuck->len, stuck->bytes);
}

Status Executor::waitForAny(Run& r) {
  transports::RequestTable& table = r.t.requests();
  auto ready = [&] {
    return table.anyFinished() || (local_pending_ > 0 && compute_->anyFinished());
  };
  if (!ready()) {
    const Request oldest = oldestOutstanding();
    if (r.fe && oldest.valid()) {
      const transports::RequestRecord& rec = table.at(oldest);
      r.fe->waitingOn(rec.peer, rec.len, rec.bytes);
    }
    if (Status s = r.t.waitUntil(ready, r.deadline, oldest); !s.isOk()) {  // formats on failure
      if (r.fe) recordStuckSend(r.t, *r.fe);
      return s.prepend(
          fmt::format("collective #{} step {} of {}", calls_, progressed(), sched_->ops.size()));
    }
  }
  CCSCOPE_RETURN_IF_ERROR(reap(r));
  if (r.fe) {  // once per wait, not per request: a failed wait keeps its peer for the report
    r.fe->doneWaiting();
    r.fe->progress(progressed(), core::TickClock::now());
  }
  return Status::ok();
}

// The batch that starts at comm op `first`: the comm ops after it, up to a local step or to the
// first op that depends on one already in it. Cut from the schedule alone, so every rank cuts
// its batches the same way whatever finished when.
uint32_t Executor::batchEnd(uint32_t first) const {
  const auto& ops = sched_->ops;
  uint32_t end = first;
  for (; end < ops.size() && lane_of_[end] != UINT32_MAX; ++end)
    for (uint32_t k = 0; k < ops[end].dep_count; ++k)
      if (const uint32_t d = sched_->deps[ops[end].dep_begin + k]; d >= first && d < end)
        return end;
  return end;
}

// A stream-ordered transport gets every op in schedule order, the comm ops between two local
// steps as batches that batchEnd cuts (a batch runs as one, unordered, like an NCCL group). Each
// rank then issues a step's sends and receives together. Posted ahead of their step, as the
// window lets a host transport do, receives of later steps would sit in earlier groups; a
// library that runs a communicator's groups one after another, as NCCL does, would then wait on
// a cycle of ranks.
Status Executor::driveInOrder(Run& r) {
  const auto& ops = sched_->ops;
  const uint32_t limit = std::max(1u, r.t.requests().capacity() / 2);  // the harness shares it
  for (uint32_t i = 0; i < ops.size(); ++i)
    for (uint32_t k = 0; k < ops[i].dep_count; ++k)
      if (sched_->deps[ops[i].dep_begin + k] >= i)
        return Status(Code::kInternal, fmt::format("op {} of {} depends on a later op: no "
                                                   "stream order",
                                                   i, ops.size()));
  for (uint32_t i = 0; i < ops.size();) {
    if (lane_of_[i] == UINT32_MAX) {
      CCSCOPE_RETURN_IF_ERROR(startLocal(r, i++));
      continue;
    }
    const uint32_t end = batchEnd(i);
    if (end - i > limit)
      return Status(Code::kUnsupported,
                    fmt::format("{}: one step of {} messages is more than the {} requests a batch "
                                "may hold; larger segments (--segment) make fewer",
                                r.t.name(), end - i, limit));
    while (inflight_ + (end - i) > limit) CCSCOPE_RETURN_IF_ERROR(waitForAny(r));
    r.t.beginBatch();
    for (; i < end; ++i)
      if (Status s = postComm(r, i); !s.isOk()) {
        r.t.endBatch().ignore();  // the post's failure is the one to report
        return s;
      }
    CCSCOPE_RETURN_IF_ERROR(r.t.endBatch());
  }
  local_queue_.clear();  // started above, in order
  while (inflight_ > 0 || local_pending_ > 0) CCSCOPE_RETURN_IF_ERROR(waitForAny(r));
  return Status::ok();
}

Status Executor::drive(Run& r) {
  if (stream_ordered_) return driveInOrder(r);
  const size_t n = sched_->ops.size();
  while (done_ < n || inflight_ > 0 || local_pending_ > 0) {
    CCSCOPE_RETURN_IF_ERROR(postReadyComms(r));
    if (!local_queue_.empty()) {
      uint32_t op = local_queue_.back();
      local_queue_.pop_back();
      CCSCOPE_RETURN_IF_ERROR(startLocal(r, op));
      continue;
    }
    if (inflight_ == 0 && local_pending_ == 0) break;
    CCSCOPE_RETURN_IF_ERROR(waitForAny(r));
  }
  CCSCOPE_CHECK(done_ == n, "schedule has a dependency cycle");
  return Status::ok();
}

void Executor::cancelOutstanding(transports::Transport& t) {
  for (size_t i = posted_head_; i < posted_.size(); ++i) {
    const uint32_t op = posted_[i];
    if (finished_[op]) continue;
    const Request q = req_of_op_[op];
    op_of_slot_[q.slot] = UINT32_MAX;
    finished_[op] = 1;
    t.cancel(q);
  }
  inflight_ = 0;
}

Status Executor::runRecorded(transports::Transport& t, const Buffers& bufs, core::Deadline deadline,
                             core::FlightRecorder* rec, const char* op, const char* algo,
                             const char* dtype, uint64_t bytes) {
  if (!rec) return run(t, bufs, deadline);
  core::FlightEntry& fe = rec->begin(op, algo, dtype, bytes, static_cast<uint32_t>(opCount()));
  Status s = run(t, bufs, deadline, &fe);
  core::FlightRecorder::end(fe, s.isOk());
  return s;
}

Status Executor::run(transports::Transport& t, const Buffers& bufs, core::Deadline deadline,
                     core::FlightEntry* fe) {
  const bool corrupt = std::exchange(corrupt_, false);  // this run only, whatever happens
  ++calls_;
  CCSCOPE_RETURN_IF_ERROR(begin(t));
  Run r{t, bufs, deadline, fe};
  if (Status s = drive(r); !s.isOk()) {
    cancelOutstanding(t);
    return s;
  }
  if (corrupt && corrupt_op_ != UINT32_MAX) {
    char* dst = addr(bufs, sched_->ops[corrupt_op_].dst, 1);
    // Flip the lowest bit of the element's low byte: wrong in every dtype, exact checks see it.
    if (dst) compute_->flipLowBit(dst);
  }
  return Status::ok();
}

}  // namespace ccscope::collectives
