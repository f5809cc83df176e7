#include "collectives/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace ccscope::collectives {

using core::Status;
using transports::Request;

void Executor::prepare(const Schedule& s, core::DataType dtype, core::ReduceOp op,
                       uint32_t channel) {
  sched_ = &s;
  channel_ = channel;
  dtype_ = dtype;
  elem_ = core::dataTypeSize(dtype);
  reduce_ = reduceKernel(dtype, reduceOpForKernel(op));
  scale_ = scaleKernel(dtype);
  size_t n = s.ops.size();
  remaining_.assign(n, 0);
  ready_.assign(n, 0);
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
  // The corruption hook flips an element this rank's output receives, once the collective has
  // finished: whatever wrote it last, the result is then wrong, for every schedule and size.
  corrupt_op_ = UINT32_MAX;
  for (uint32_t i = 0; i < n; ++i) {
    const Op& o = s.ops[i];
    if (o.kind != OpKind::kSend && o.count > 0 && o.dst.buf == Buf::kOutput) corrupt_op_ = i;
  }
  outstanding_.clear();
  outstanding_.reserve(n);
  outstanding_op_.clear();
  outstanding_op_.reserve(n);
}

char* Executor::addr(const Buffers& bufs, const Span& s) const {
  const transports::MemoryRegion& mr = s.buf == Buf::kInput    ? bufs.input
                                       : s.buf == Buf::kOutput ? bufs.output
                                                               : bufs.scratch;
  return mr.base + s.offset * elem_;
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

void Executor::corruptFirstElement(char* dst) {
  // Flip the lowest bit of the element's low byte: wrong in every dtype, exact checks see it.
  dst[0] = static_cast<char>(dst[0] ^ 1);
}

void Executor::runLocal(const Buffers& bufs, uint32_t op) {
  const Op& o = sched_->ops[op];
  char* dst = addr(bufs, o.dst);
  switch (o.kind) {
    case OpKind::kReduce:
      reduce_(dst, addr(bufs, o.a), addr(bufs, o.b), o.count);
      break;
    case OpKind::kCopy: {
      const char* src = addr(bufs, o.a);
      if (src != dst && o.count) std::memmove(dst, src, o.count * elem_);
      break;
    }
    case OpKind::kScale:
      scale_(dst, o.count, sched_->ranks);
      break;
    default:
      break;
  }
}

Status Executor::postComm(transports::Transport& t, const Buffers& bufs, uint32_t op) {
  const Op& o = sched_->ops[op];
  // Top bit: channel; next 7 bits: the call number, so a rank one collective ahead of its peer
  // is caught as a tag mismatch; low 24 bits: the message's index in the schedule.
  uint32_t tag =
      (channel_ << 31) | (static_cast<uint32_t>(calls_ & 0x7f) << 24) | (o.tag & 0xffffff);
  const Span& sp = o.kind == OpKind::kSend ? o.a : o.dst;
  const transports::MemoryRegion& mr = sp.buf == Buf::kInput    ? bufs.input
                                       : sp.buf == Buf::kOutput ? bufs.output
                                                                : bufs.scratch;
  size_t off = sp.offset * elem_, len = o.count * elem_;
  auto r = o.kind == OpKind::kSend ? t.postSend(o.peer, tag, mr, off, len)
                                   : t.postRecv(o.peer, tag, mr, off, len);
  if (!r) return r.takeStatus();
  outstanding_.push_back(*r);
  outstanding_op_.push_back(op);
  return Status::ok();
}

void Executor::recordStuckSend(transports::Transport& t, core::FlightEntry& fe) const {
  const transports::RequestRecord* stuck = nullptr;
  for (const transports::Request& r : outstanding_) {
    const transports::RequestRecord& rec = t.requests().at(r);
    if (rec.dir != transports::Dir::kSend || t.requests().finished(r)) continue;
    if (!stuck || rec.last_progress_ns < stuck->last_progress_ns) stuck = &rec;
  }
  if (stuck) fe.sendStuck(stuck->peer, stuck->len, stuck->bytes);
}

void Executor::resetRun() {
  done_ = 0;
  std::fill(ready_.begin(), ready_.end(), 0);
  std::fill(lane_cursor_.begin(), lane_cursor_.end(), 0);
  local_queue_.clear();
  outstanding_.clear();
  outstanding_op_.clear();
  const auto& ops = sched_->ops;
  for (uint32_t i = 0; i < ops.size(); ++i) {
    remaining_[i] = ops[i].dep_count;
    if (remaining_[i] == 0) onReady(i);
  }
}

Status Executor::postReadyComms(transports::Transport& t, const Buffers& bufs) {
  for (size_t lane = 0; lane < lanes_.size(); ++lane) {
    auto& order = lanes_[lane];
    uint32_t& cur = lane_cursor_[lane];
    while (cur < order.size() && ready_[order[cur]])
      CCSCOPE_RETURN_IF_ERROR(postComm(t, bufs, order[cur++]));
  }
  return Status::ok();
}

Status Executor::releaseFinished(transports::Transport& t) {
  for (size_t i = 0; i < outstanding_.size();) {
    if (!t.requests().finished(outstanding_[i])) {
      ++i;
      continue;
    }
    Status s = t.requests().release(outstanding_[i]);
    uint32_t op = outstanding_op_[i];
    outstanding_[i] = outstanding_.back();
    outstanding_.pop_back();
    outstanding_op_[i] = outstanding_op_.back();
    outstanding_op_.pop_back();
    if (!s.isOk()) return s;
    markDone(op);
  }
  return Status::ok();
}

Status Executor::run(transports::Transport& t, const Buffers& bufs, core::Deadline deadline,
                     core::FlightEntry* fe) {
  CCSCOPE_CHECK(sched_ != nullptr, "Executor::run before prepare");
  const auto& ops = sched_->ops;
  const bool corrupt = std::exchange(corrupt_, false);  // this run only, whatever happens
  ++calls_;
  resetRun();
  while (done_ < ops.size()) {
    CCSCOPE_RETURN_IF_ERROR(postReadyComms(t, bufs));
    if (!local_queue_.empty()) {
      uint32_t op = local_queue_.back();
      local_queue_.pop_back();
      runLocal(bufs, op);
      markDone(op);
      continue;
    }
    if (outstanding_.empty()) break;
    if (fe) {
      const transports::RequestRecord& oldest = t.requests().at(outstanding_[0]);
      fe->waitingOn(oldest.peer, oldest.len, oldest.bytes);
    }
    if (Status s = t.waitAny(outstanding_, deadline); !s.isOk()) {  // formats only on failure
      if (fe) recordStuckSend(t, *fe);
      return s.prepend(fmt::format("collective #{} step {} of {}", calls_, done_, ops.size()));
    }
    CCSCOPE_RETURN_IF_ERROR(releaseFinished(t));
    if (fe) {  // once per wait, not per request: a failed wait keeps its peer for the report
      fe->doneWaiting();
      fe->progress(done_, core::TickClock::now());
    }
  }
  CCSCOPE_CHECK(done_ == ops.size(), "schedule has a dependency cycle");
  if (corrupt && corrupt_op_ != UINT32_MAX) corruptFirstElement(addr(bufs, ops[corrupt_op_].dst));
  return Status::ok();
}

}  // namespace ccscope::collectives
