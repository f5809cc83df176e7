// Deadline: every blocking call in ccscope takes one. Monotonic clock, never wall time.
#pragma once

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace ccscope::core {

using Clock = std::chrono::steady_clock;

inline int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// The same clock read from the kernel's last tick: a few milliseconds behind nowNs() at most
// (CLOCK_MONOTONIC_COARSE shares CLOCK_MONOTONIC's origin), and a quarter of the cost. For the
// bookkeeping the data path does on every message (request and flight-recorder timestamps):
// hang reports need "idle for 3.2 s", not nanoseconds; measured latencies always use nowNs().
inline int64_t coarseNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The data path's bookkeeping clock (request and flight-recorder timestamps): while a thread of
// the process ticks it (bench's wait sampler, every 5 ms, longer on an oversubscribed host),
// reading it is one relaxed load; otherwise it is coarseNowNs(). Resolution a few milliseconds
// either way, tens on an oversubscribed host, where the ticking thread may also wait for a core
// (reported idle times can then be long by a scheduling quantum); never for deadlines or
// measured latencies.
class TickClock {
 public:
  static int64_t now() {
    int64_t t = ticked_.load(std::memory_order_relaxed);
    return t ? t : coarseNowNs();
  }
  static void tick() { ticked_.store(coarseNowNs(), std::memory_order_relaxed); }
  static void stop() { ticked_.store(0, std::memory_order_relaxed); }

 private:
  static inline std::atomic<int64_t> ticked_{0};
};

// Seconds as int64 nanoseconds, saturating: past INT64_MAX (1e30, +inf) is INT64_MAX, and zero,
// negative or NaN is 0. For every timeout a caller multiplies into nanoseconds.
inline int64_t secondsToNs(double s) {
  if (!(s > 0)) return 0;  // also NaN
  const double ns = s * 1e9;
  // 2^63, the first double past INT64_MAX: below it the conversion is defined.
  return ns >= 0x1p63 ? INT64_MAX : static_cast<int64_t>(ns);
}

// A duration too long for int64 nanoseconds past now (1e30 s, +inf) saturates to never(), so a
// huge timeout means no deadline rather than wrapping into one already past. afterSeconds() of
// zero, a negative number or NaN is a deadline already expired: a library caller gets a
// timeout at once, never a wait without end (the CLI refuses such durations before this).
class Deadline {
 public:
  static Deadline after(std::chrono::nanoseconds d) {
    const int64_t now = nowNs();
    const int64_t ns = d.count();
    if (ns >= INT64_MAX - now) return never();
    // Already expired; at now, not earlier, so remainingNs() cannot overflow either.
    return Deadline(ns > 0 ? now + ns : now);
  }
  static Deadline afterSeconds(double s) { return after(std::chrono::nanoseconds(secondsToNs(s))); }
  static Deadline never() { return Deadline(INT64_MAX); }

  bool expired() const { return nowNs() >= at_ns_; }
  int64_t remainingNs() const {
    int64_t r = at_ns_ - nowNs();
    return r > 0 ? r : 0;
  }
  // Milliseconds left, rounded up and clamped for poll/epoll_wait (never -1, even for never()).
  int remainingMsClamped(int cap_ms) const {
    const int64_t ns = remainingNs();
    const int64_t ms = ns / 1000000 + (ns % 1000000 != 0);
    return static_cast<int>(ms < cap_ms ? ms : cap_ms);
  }
  int64_t atNs() const { return at_ns_; }
  bool isNever() const { return at_ns_ == INT64_MAX; }

 private:
  explicit Deadline(int64_t at) : at_ns_(at) {}
  int64_t at_ns_;
};

}  // namespace ccscope::core
