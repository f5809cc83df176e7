// Two verbs transports in one process over the fake fabric, connected through an in-process
// bootstrap, and driven from the test's thread.
#pragma once

#include <functional>
#include <memory>

#include "tests/transports/thread_bootstrap.h"
#include "tests/transports/verbs/fake_verbs.h"
#include "transports/verbs/verbs_ops.h"

namespace ccscope::transports::verbs::fake {

using test_support::SharedStore;
using test_support::ThreadBootstrap;

struct Pair {
  FakeFabric fabric;
  std::unique_ptr<Transport> t[2];
  // Connects both (each in its own thread); the statuses of rank 0 and rank 1.
  std::pair<core::Status, core::Status> connect(const TransportOptions& opts = {});
  // Progresses both until `done` or the budget of rounds runs out.
  bool drive(const std::function<bool()>& done, int rounds = 10000);
};

}  // namespace ccscope::transports::verbs::fake
