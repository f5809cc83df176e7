#include "transports/transport.h"

#include <sched.h>

#include <cstdlib>
#include <thread>

namespace ccscope::transports {

using core::Status;

void Transport::initTable(int rank, int size, uint32_t capacity) {
  rank_ = rank;
  size_ = size;
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

bool Transport::test(Request r) {
  if (table_->finished(r)) return true;
  progress().ignore();
  return table_->finished(r);
}

Status Transport::waitAny(std::span<const Request> reqs, core::Deadline deadline) {
  auto any = [&] {
    for (const Request& r : reqs)
      if (table_->finished(r)) return true;
    return false;
  };
  if (reqs.empty() || any()) return Status::ok();
  // The clock is read once per kClockEvery polls: a clock read costs as much as a poll of an
  // idle shm ring, and the first polls are where small messages arrive.
  constexpr uint32_t kClockEvery = 16;
  int64_t spin_until = 0;  // set at the first clock read
  for (uint32_t polls = 1;; ++polls) {
    CCSCOPE_RETURN_IF_ERROR(progress());
    if (any()) return Status::ok();
    if (yield_in_spin_) sched_yield();
    if (polls % kClockEvery != 0 && !yield_in_spin_) continue;
    int64_t now = core::nowNs();
    if (spin_until == 0) spin_until = now + spin_ns_;
    if (now < spin_until) continue;
    if (deadline.expired()) {
      // Blame the oldest unfinished request: it is the one everyone else waits behind.
      const RequestRecord* oldest = nullptr;
      for (const Request& r : reqs) {
        const RequestRecord& rec = table_->at(r);
        if (!oldest || rec.last_progress_ns < oldest->last_progress_ns) oldest = &rec;
      }
      return table_->timeoutStatus(*oldest);
    }
    blockFor(std::min<int64_t>(deadline.remainingNs(), 5'000'000));
  }
}

Status Transport::wait(Request r, core::Deadline deadline) {
  CCSCOPE_RETURN_IF_ERROR(waitAny(std::span<const Request>(&r, 1), deadline));
  return table_->release(r);
}

}  // namespace ccscope::transports
