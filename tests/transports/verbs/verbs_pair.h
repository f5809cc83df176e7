// Two verbs transports in one process over the fake fabric, connected through an in-process
// bootstrap, and driven from the test's thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "launch/bootstrap.h"
#include "tests/transports/verbs/fake_verbs.h"
#include "transports/verbs/verbs_ops.h"

namespace ccscope::transports::verbs::fake {

// A key/value store shared by the ranks (threads) of one test.
struct SharedStore {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::string> kv;
  std::map<std::string, int> arrived;
};

class ThreadBootstrap final : public launch::Bootstrap {
 public:
  ThreadBootstrap(SharedStore& s, int rank, int size) : s_(s), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& jobToken() const override { return token_; }
  core::Status put(const std::string& key, std::string_view value) override;
  core::Result<std::string> get(const std::string& key, core::Deadline deadline) override;
  core::Status barrier(const std::string& name, core::Deadline deadline) override;

 private:
  SharedStore& s_;
  int rank_, size_;
  std::string token_ = "verbs-test";
};

struct Pair {
  FakeFabric fabric;
  std::unique_ptr<Transport> t[2];
  // Connects both (each in its own thread); the statuses of rank 0 and rank 1.
  std::pair<core::Status, core::Status> connect(const TransportOptions& opts = {});
  // Progresses both until `done` or the budget of rounds runs out.
  bool drive(const std::function<bool()>& done, int rounds = 10000);
};

}  // namespace ccscope::transports::verbs::fake
