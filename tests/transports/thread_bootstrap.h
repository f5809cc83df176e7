// An in-process bootstrap for tests whose ranks are threads: a shared key/value store, a
// settable job token, and a hook that runs before each get and barrier, so a test can order
// two jobs' connect steps exactly.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "launch/bootstrap.h"

namespace ccscope::transports::test_support {

// A key/value store shared by the ranks (threads) of one job.
struct SharedStore {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::string> kv;
  std::map<std::string, int> arrived;
};

class ThreadBootstrap final : public launch::Bootstrap {
 public:
  using Hook = std::function<void(const std::string& op, const std::string& key)>;
  ThreadBootstrap(SharedStore& s, int rank, int size, std::string token = "thread-test",
                  Hook before = nullptr)
      : s_(s), rank_(rank), size_(size), token_(std::move(token)), before_(std::move(before)) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& jobToken() const override { return token_; }
  core::Status put(const std::string& key, std::string_view value) override;
  core::Result<std::string> get(const std::string& key, core::Deadline deadline) override;
  core::Status barrier(const std::string& name, core::Deadline deadline) override;

 private:
  SharedStore& s_;
  int rank_, size_;
  std::string token_;
  Hook before_;
};

}  // namespace ccscope::transports::test_support
