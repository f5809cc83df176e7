// A rank's side of the rendezvous: the key/value Bootstrap plus the control connection that
// sends heartbeats (from a small thread) and can ask the store who stopped answering.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "launch/bootstrap.h"
#include "launch/rank_health.h"
#include "launch/socket_util.h"

namespace ccscope::launch {

class StoreClient : public Bootstrap {
 public:
  // Connects (retrying while the store is not up yet), presents the token, starts heartbeats,
  // then waits until all ranks joined; the error names the ranks that did not.
  static core::Result<std::unique_ptr<StoreClient>> join(const HostPort& store, std::string token,
                                                         int rank, int size,
                                                         core::Deadline deadline);
  ~StoreClient() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& jobToken() const override { return token_; }
  core::Status put(const std::string& key, std::string_view value) override;
  core::Result<std::string> get(const std::string& key, core::Deadline deadline) override;
  core::Status barrier(const std::string& name, core::Deadline deadline) override;
  core::Result<int64_t> add(const std::string& key, int64_t delta, core::Deadline deadline);

  // Every rank's state as the store sees it (the hang diagnosis reads this).
  core::Result<std::vector<RankHealth>> health(core::Deadline deadline);
  void reportAbort(const std::string& reason);
  // Called by the heartbeat thread on every beat: the progress snapshot sent with it.
  void setNoteProvider(std::function<std::string()> provider);
  // Clean goodbye: the store records this rank as done, not gone.
  void finish();
  // The local address of this rank's connection to the store: the interface that reaches it.
  std::string localAddress() const { return localAddressOf(kv_.get()); }
  const HostPort& storeAddress() const { return store_; }

 private:
  StoreClient() = default;
  core::Status hello(Fd& fd, uint32_t role, core::Deadline deadline);
  core::Result<std::string> request(const std::string& frame, int64_t id, core::Deadline deadline);
  void heartbeatLoop();

  int rank_ = 0, size_ = 0;
  std::string token_;
  HostPort store_;
  Fd kv_, ctl_;
  std::mutex kv_mu_, ctl_mu_;        // one per connection: health() runs while a get() waits
  std::atomic<int64_t> next_id_{1};  // shared by both connections, so not under either lock
  std::function<std::string()> note_provider_;
  std::atomic<bool> stop_{false};
  bool finished_ = false;
  std::condition_variable_any cv_;
  std::thread heartbeat_;
};

}  // namespace ccscope::launch
