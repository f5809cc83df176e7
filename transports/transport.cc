#include "transports/transport.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace ccscope::transports {

using core::Code;
using core::Status;

Transport::Transport() : owner_(std::make_shared<Registration::Owner>(Registration::Owner{this})) {}

// Registrations that outlive the transport find their owner gone and do nothing.
Transport::~Transport() { owner_.reset(); }

void Transport::initTable(int rank, int size, uint32_t capacity) {
  rank_ = rank;
  size_ = size;
  if (capacity == 0) capacity = request_slots_ ? request_slots_ : RequestTable::kDefaultCapacity;
  table_ = std::make_unique<RequestTable>(rank, size, name(), capacity);
}

void Transport::setSpinPolicy(int local_ranks) {
  // With a core per rank, spinning wins latency; oversubscribed, it steals the peer's core.
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  bool oversubscribed = local_ranks > cores;
  spin_ns_ = oversubscribed ? 500000 : 50000;  // oversubscribed spins yield the core each turn
  yield_in_spin_ = oversubscribed;
  if (const char* s = std::getenv("CCSCOPE_SPIN_US")) spin_ns_ = std::atoll(s) * 1000;
}

uint32_t Transport::inflightPerPeer() const {
  uint32_t want = caps().max_inflight_per_peer;
  if (!table_ || size_ < 2) return std::max<uint32_t>(want, 1);
  // Every peer, both directions, at once, with a little room for the caller's own requests.
  uint32_t fits = table_->capacity() / (2 * static_cast<uint32_t>(size_ - 1) + 1);
  return std::max<uint32_t>(1, std::min(want, fits));
}

core::Result<Registration> Transport::registerMemory(void* base, size_t len, MemoryKind kind,
                                                     int device) {
  if (!caps().memory_kinds.has(kind))
    return Status(Code::kInvalidArgument,
                  fmt::format("{} cannot move {} memory (it moves {})", name(),
                              memoryKindName(kind), caps().memory_kinds.names()));
  if (base == nullptr && len > 0)
    return Status(Code::kInvalidArgument, "registering a null buffer");
  char* p = static_cast<char*>(base);
  CCSCOPE_ASSIGN_OR_RETURN(MemoryKeys keys, doRegister(p, len, kind, device));
  return Registration(owner_, MemoryRegion(p, len, kind, kind == MemoryKind::kCuda ? device : -1,
                                           next_region_++, keys));
}

Status Transport::checkPost(int peer, const MemoryRegion& mr, size_t offset, size_t len) const {
  if (!connected_ || !table_)
    return Status(Code::kInvalidArgument,
                  fmt::format("{} transport used before connect() or after close()", name()));
  if (peer < 0 || peer >= size_ || peer == rank_)
    return Status(Code::kInvalidArgument, fmt::format("invalid peer rank {}", peer));
  if (mr.id() == 0 && len > 0)
    return Status(Code::kInvalidArgument, "posting from memory that was never registered");
  if (!mr.contains(offset, len))
    return Status(Code::kInvalidArgument,
                  fmt::format("{} B at offset {} overrun memory region {} of {} B", len, offset,
                              mr.id(), mr.len()));
  return Status::ok();
}

core::Result<Request> Transport::post(Dir dir, int peer, uint32_t tag, const MemoryRegion& mr,
                                      size_t offset, size_t len) {
  // The same checks as checkPost, without building a Status on the data path: a small message
  // costs well under a microsecond end to end.
  const bool fine = connected_ && peer >= 0 && peer < size_ && peer != rank_ &&
                    (mr.id() != 0 || len == 0) && mr.contains(offset, len);
  if (!fine) return checkPost(peer, mr, offset, len);
  return doPost(dir, peer, tag, mr.view(offset, len));
}

void Transport::cancel(Request r) {
  if (!r.valid() || !table_) return;
  if (table_->finished(r)) {
    table_->release(r).ignore();
    return;
  }
  const uint32_t slot = r.slot;
  table_->cancel(r);
  cancelPending(slot);
}

bool Transport::test(Request r) {
  if (table_->finished(r)) return true;
  progress().ignore();
  return table_->finished(r);
}

bool Transport::spinOrBlock(uint32_t polls, int64_t& spin_until, core::Deadline deadline) {
  if (yield_in_spin_) sched_yield();
  if (polls % kClockEvery != 0 && !yield_in_spin_) return false;
  int64_t now = core::nowNs();
  if (spin_until == 0) spin_until = now + spin_ns_;
  if (now < spin_until) return false;
  if (deadline.expired()) return true;
  blockFor(std::min<int64_t>(deadline.remainingNs(), 5'000'000));
  return false;
}

Status Transport::waitAny(std::span<const Request> reqs, core::Deadline deadline) {
  if (reqs.empty()) return Status::ok();
  auto any = [&] {
    return std::any_of(reqs.begin(), reqs.end(), [&](Request r) { return table_->finished(r); });
  };
  // Blame the unfinished request that moved last longest ago: the one the others wait behind.
  auto oldest = [&] {
    Request best = reqs.front();
    for (const Request& r : reqs)
      if (table_->at(r).last_progress_ns < table_->at(best).last_progress_ns) best = r;
    return best;
  };
  if (any()) return Status::ok();
  Status s = waitUntil(any, deadline, Request{});
  if (s.code() != Code::kDeadlineExceeded || any()) return s;
  return table_->timeoutStatus(table_->at(oldest()));
}

Status Transport::wait(Request r, core::Deadline deadline) {
  CCSCOPE_RETURN_IF_ERROR(waitUntil([&] { return table_->finished(r); }, deadline, r));
  return table_->release(r);
}

Status Transport::waitOrCancel(Request r, core::Deadline deadline) {
  Status s = waitUntil([&] { return table_->finished(r); }, deadline, r);
  if (s.isOk()) return table_->release(r);
  cancel(r);
  return s;
}

Registration& Registration::operator=(Registration&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = std::move(o.owner_);
    mr_ = o.mr_;
    o.mr_ = MemoryRegion();
  }
  return *this;
}

void Registration::reset() {
  if (auto owner = owner_.lock(); owner && mr_.id() != 0) owner->transport->doDeregister(mr_);
  owner_.reset();
  mr_ = MemoryRegion();
}

}  // namespace ccscope::transports
