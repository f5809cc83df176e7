#include "tests/transports/verbs/verbs_pair.h"

#include <thread>

namespace ccscope::transports::verbs::fake {

std::pair<core::Status, core::Status> Pair::connect(const TransportOptions& opts) {
  SharedStore store;
  core::Status st[2];
  for (int r = 0; r < 2; ++r) t[r] = makeVerbsTransportOn(opts, fabric.ops());
  std::thread other([&] {
    ThreadBootstrap bs(store, 1, 2);
    st[1] = t[1]->connect(bs, core::Deadline::afterSeconds(10));
  });
  ThreadBootstrap bs(store, 0, 2);
  st[0] = t[0]->connect(bs, core::Deadline::afterSeconds(10));
  other.join();
  return {st[0], st[1]};
}

bool Pair::drive(const std::function<bool()>& done, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    if (done()) return true;
    for (auto& x : t) x->progress().ignore();
    if (i > 100) std::this_thread::yield();
  }
  return done();
}

}  // namespace ccscope::transports::verbs::fake
