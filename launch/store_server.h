// The TCP rendezvous store: a key/value exchange for addresses plus the job's liveness table.
// Runs on a thread of rank 0 (or of the local launcher). Every connection must present the job
// token first; anything else is refused. Each rank keeps two connections: one for keys and one
// control connection carrying heartbeats, so the store can tell a rank that is gone (connection
// closed) from one that is frozen (connection open, heartbeats stopped).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "launch/rank_health.h"
#include "launch/socket_util.h"

namespace ccscope::launch {

class StoreServer {
 public:
  static core::Result<std::unique_ptr<StoreServer>> start(const std::string& bind_host, int port,
                                                          std::string token, int world_size);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const { return port_; }
  std::vector<RankHealth> health() const;
  // What ended a rank the launcher reaped: lets a diagnosis tell a killed rank from one that
  // died of its death moments later.
  void noteEndSignal(int rank, int signal);

 private:
  struct State;
  StoreServer() = default;
  void loop();

  int port_ = 0;
  Fd listen_fd_;
  Fd wake_fd_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<State> state_;
  std::thread thread_;
};

}  // namespace ccscope::launch
