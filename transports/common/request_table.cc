#include "transports/common/request_table.h"

#include <fmt/format.h>

#include <algorithm>

namespace ccscope::transports {

using core::Code;
using core::Status;

RequestTable::RequestTable(int self_rank, int world_size, const char* transport_name,
                           uint32_t capacity)
    : self_(self_rank), name_(transport_name), recs_(capacity), peer_errors_(world_size) {
  free_.reserve(capacity);
  for (uint32_t i = capacity; i > 0; --i) free_.push_back(i - 1);
}

core::Result<Request> RequestTable::open(Dir dir, int peer, uint32_t tag, char* buf, size_t len) {
  if (peer < 0 || peer >= static_cast<int>(peer_errors_.size()) || peer == self_)
    return Status(Code::kInvalidArgument, fmt::format("invalid peer rank {}", peer));
  if (!peer_errors_[peer].isOk()) return peer_errors_[peer];
  if (free_.empty())
    return Status(Code::kUnavailable,
                  fmt::format("{}: more than {} requests outstanding", name_, recs_.size()));
  uint32_t i = free_.back();
  free_.pop_back();
  RequestRecord& r = recs_[i];
  // Field by field, not from a zeroed temporary (a rep stos of the whole record on every post);
  // the error was cleared when the slot was freed, and a stale entry of the slot's last use may
  // still be linked into the finished list (in_done_list, next_done stay).
  r.gen += 1;
  r.state = ReqState::kPending;
  r.dir = dir;
  r.peer = peer;
  r.tag = tag;
  r.buf = buf;
  r.len = len;
  r.bytes = 0;
  r.parts_left = 0;
  r.done_ns = 0;
  r.cancelled = false;
  r.seq = next_seq_++;
  r.posted_ns = r.last_progress_ns = core::TickClock::now();
  peak_in_use_ = std::max(peak_in_use_, inUse());
  return Request{i, r.gen};
}

void RequestTable::addBytes(uint32_t slot, size_t n) {
  RequestRecord& r = recs_[slot];
  r.bytes += n;
  r.last_progress_ns = last_progress_ns_ = core::TickClock::now();
}

void RequestTable::complete(uint32_t slot) {
  RequestRecord& r = recs_[slot];
  r.state = ReqState::kDone;
  r.done_ns = r.last_progress_ns = last_progress_ns_ = core::TickClock::now();
  if (r.cancelled)
    freeSlot(slot);
  else
    pushFinished(slot);
}

void RequestTable::fail(uint32_t slot, Status s) {
  RequestRecord& r = recs_[slot];
  if (r.state != ReqState::kPending) return;
  if (r.cancelled) {
    freeSlot(slot);
    return;
  }
  r.state = ReqState::kFailed;
  r.error = std::move(s.prepend(describe(r)));
  pushFinished(slot);
}

void RequestTable::cancel(Request r) {
  RequestRecord& rec = at(r);
  if (rec.state != ReqState::kPending) {
    freeSlot(r.slot);
    return;
  }
  rec.cancelled = true;
  rec.buf = nullptr;
  ++rec.gen;  // the owner's handle is stale from here on
}

void RequestTable::drop(uint32_t slot) {
  CCSCOPE_CHECK(recs_[slot].cancelled, "drop of a request that was not cancelled");
  freeSlot(slot);
}

void RequestTable::freeSlot(uint32_t slot) {
  RequestRecord& rec = recs_[slot];
  rec.state = ReqState::kFree;
  rec.error = Status();
  rec.cancelled = false;
  rec.buf = nullptr;
  free_.push_back(slot);
}

void RequestTable::pushFinished(uint32_t slot) {
  RequestRecord& r = recs_[slot];
  if (r.in_done_list) return;  // still listed from an earlier use of the slot
  r.in_done_list = true;
  r.next_done = UINT32_MAX;
  if (done_tail_ == UINT32_MAX)
    done_head_ = slot;
  else
    recs_[done_tail_].next_done = slot;
  done_tail_ = slot;
}

bool RequestTable::nextFinished(Request* out) {
  while (done_head_ != UINT32_MAX) {
    uint32_t slot = done_head_;
    RequestRecord& r = recs_[slot];
    done_head_ = r.next_done;
    if (done_head_ == UINT32_MAX) done_tail_ = UINT32_MAX;
    r.in_done_list = false;
    // Released since it finished (free), or reused and not finished yet: nothing to report.
    if (r.state != ReqState::kDone && r.state != ReqState::kFailed) continue;
    *out = Request{slot, r.gen};
    return true;
  }
  return false;
}

void RequestTable::failPeer(int peer, const Status& s) {
  if (peer_errors_[peer].isOk()) peer_errors_[peer] = s;
  for (uint32_t i = 0; i < recs_.size(); ++i)
    if (recs_[i].state == ReqState::kPending && recs_[i].peer == peer) fail(i, s);
}

Status RequestTable::release(Request r) {
  RequestRecord& rec = at(r);
  CCSCOPE_CHECK(rec.state == ReqState::kDone || rec.state == ReqState::kFailed,
                "release of an unfinished request");
  Status s = rec.state == ReqState::kFailed ? std::move(rec.error) : Status::ok();
  freeSlot(r.slot);
  return s;
}

std::string RequestTable::describe(const RequestRecord& rec) const {
  int from = rec.dir == Dir::kSend ? self_ : rec.peer;
  int to = rec.dir == Dir::kSend ? rec.peer : self_;
  return fmt::format("{} r{}->r{} {} tag {:#x} #{}", rec.dir == Dir::kSend ? "send" : "recv", from,
                     to, name_, rec.tag, rec.seq);
}

Status RequestTable::timeoutStatus(const RequestRecord& rec) const {
  int64_t now = core::nowNs();
  std::string what = rec.dir == Dir::kSend ? "delivered" : "arrived";
  return Status(Code::kDeadlineExceeded,
                fmt::format("rank {} waited {:.1f} s on {} for rank {}: {} of {} B {}, last "
                            "progress on it {:.1f} s ago",
                            self_, (now - rec.posted_ns) / 1e9, describe(rec), rec.peer, rec.bytes,
                            rec.len, what, (now - rec.last_progress_ns) / 1e9))
      .withPeer(rec.peer);
}

}  // namespace ccscope::transports
