// The flight recorder's storage: a fixed ring of the most recent collective operations of this
// rank, written by the data path with relaxed atomic stores only (no locks, no allocation) and
// read concurrently by the agent thread (heartbeat snapshots) and by dumps (timeout, SIGUSR1,
// coordinator request). Readers may see a half-updated entry; every field is individually
// consistent, which is all a hang report needs. Times come from TickClock (a few ms of
// resolution, usually one load): the recorder's budget is 2% of an 8 B allreduce.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "core/deadline.h"

namespace ccscope::core {

enum class FlightState : uint32_t { kEmpty, kRunning, kDone, kFailed };

struct FlightEntry {
  std::atomic<uint64_t> seq{0};
  std::atomic<const char*> collective{""};  // static strings only
  std::atomic<const char*> algorithm{""};
  std::atomic<const char*> dtype{""};
  std::atomic<uint64_t> bytes{0};
  std::atomic<int64_t> start_ns{0};
  std::atomic<int64_t> end_ns{0};
  std::atomic<int64_t> last_progress_ns{0};
  std::atomic<FlightState> state{FlightState::kEmpty};
  std::atomic<uint32_t> step{0};           // operations of the schedule completed
  std::atomic<uint32_t> steps{0};          // operations in the schedule
  std::atomic<int32_t> waiting_peer{-1};   // >= 0 only while blocked waiting on that peer
  std::atomic<uint64_t> peer_expected{0};  // bytes of the request waited on
  std::atomic<uint64_t> peer_moved{0};     // ... and how many of them moved
  // Set only when the operation fails: the send that was still unfinished then (a send ends once
  // the transport has taken it, so one that never does points at the path to that peer).
  std::atomic<int32_t> stuck_send_peer{-1};
  std::atomic<uint64_t> stuck_send_expected{0};
  std::atomic<uint64_t> stuck_send_moved{0};

  void progress(uint32_t done, int64_t now) {
    step.store(done, std::memory_order_relaxed);
    last_progress_ns.store(now, std::memory_order_relaxed);
  }
  void waitingOn(int peer, uint64_t expected, uint64_t moved) {
    waiting_peer.store(peer, std::memory_order_relaxed);
    peer_expected.store(expected, std::memory_order_relaxed);
    peer_moved.store(moved, std::memory_order_relaxed);
  }
  void doneWaiting() { waiting_peer.store(-1, std::memory_order_relaxed); }
  void sendStuck(int peer, uint64_t expected, uint64_t moved) {
    stuck_send_expected.store(expected, std::memory_order_relaxed);
    stuck_send_moved.store(moved, std::memory_order_relaxed);
    stuck_send_peer.store(peer, std::memory_order_relaxed);
  }
};

// The harness's own collectives (the barrier between timed iterations, the statistics
// reductions) are recorded under these names, so that a hang in them shows whom each rank waits
// on; a profile of the measured collectives leaves them out.
inline constexpr const char* kHarnessBarrier = "barrier";
inline constexpr const char* kHarnessReduction = "ring (harness statistics)";
inline bool isHarnessOperation(const FlightEntry& e) {
  return std::string_view(e.collective.load(std::memory_order_relaxed)) == kHarnessBarrier ||
         std::string_view(e.algorithm.load(std::memory_order_relaxed)) == kHarnessReduction;
}

class FlightRecorder {
 public:
  static constexpr size_t kEntries = 64;

  // Starts a new operation in the next slot; returns it for the data path to update.
  FlightEntry& begin(const char* collective, const char* algorithm, const char* dtype,
                     uint64_t bytes, uint32_t steps) {
    // One writer (the data path): a plain increment, no atomic read-modify-write.
    uint64_t seq = next_seq_.load(std::memory_order_relaxed) + 1;
    next_seq_.store(seq, std::memory_order_relaxed);
    FlightEntry& e = entries_[seq % kEntries];
    int64_t now = TickClock::now();
    e.state.store(FlightState::kRunning, std::memory_order_relaxed);
    e.collective.store(collective, std::memory_order_relaxed);
    e.algorithm.store(algorithm, std::memory_order_relaxed);
    e.dtype.store(dtype, std::memory_order_relaxed);
    e.bytes.store(bytes, std::memory_order_relaxed);
    e.start_ns.store(now, std::memory_order_relaxed);
    e.end_ns.store(0, std::memory_order_relaxed);
    e.steps.store(steps, std::memory_order_relaxed);
    e.waitingOn(-1, 0, 0);
    e.stuck_send_peer.store(-1, std::memory_order_relaxed);
    e.progress(0, now);
    e.seq.store(seq, std::memory_order_release);
    return e;
  }
  // A failed operation keeps whom it waited on: that is what the hang report needs.
  static void end(FlightEntry& e, bool ok) {
    e.end_ns.store(TickClock::now(), std::memory_order_relaxed);
    if (ok) e.waitingOn(-1, 0, 0);
    e.state.store(ok ? FlightState::kDone : FlightState::kFailed, std::memory_order_release);
  }

  uint64_t latestSeq() const { return next_seq_.load(std::memory_order_acquire); }
  const FlightEntry& entry(uint64_t seq) const { return entries_[seq % kEntries]; }

 private:
  std::atomic<uint64_t> next_seq_{0};
  std::array<FlightEntry, kEntries> entries_;
};

}  // namespace ccscope::core
