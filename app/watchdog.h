// A watchdog for backends whose calls take no deadline (MPI's collectives block forever on a
// stopped peer): if one operation runs past the timeout, it reports and ends the process with
// the hang exit code, so no rank outlives its deadline.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "collectives/collective_backend.h"

namespace ccscope::app {

class Watchdog {
 public:
  // on_hang runs on the watchdog thread and must not return (it exits the process); on_dump
  // runs there too, after SIGUSR1 (the handler only sets a flag).
  Watchdog(double timeout_s, std::function<void(double stuck_s)> on_hang,
           std::function<void()> on_dump = nullptr);
  ~Watchdog();
  void begin() { started_ns_.store(core::nowNs(), std::memory_order_relaxed); }
  void end() { started_ns_.store(0, std::memory_order_relaxed); }

 private:
  void loop();
  int64_t timeout_ns_;
  std::function<void(double)> on_hang_;
  std::function<void()> on_dump_;
  std::atomic<int64_t> started_ns_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Forwards to a backend, telling the watchdog when each call starts and ends.
std::unique_ptr<collectives::CollectiveBackend> watched(
    std::unique_ptr<collectives::CollectiveBackend> inner, Watchdog& dog);

}  // namespace ccscope::app
