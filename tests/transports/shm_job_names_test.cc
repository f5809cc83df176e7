// Two jobs on one node whose job tokens are equal (or agree in the part shm names its segments
// after) must reach only their own ranks. The jobs' connect steps are ordered so that job B
// creates its segments after job A created its own and before A opens its peers': names
// derived from the token alone then lead A into B's segments.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/host_memory.h"
#include "tests/transports/thread_bootstrap.h"
#include "transports/shm/shm_transport.h"

namespace ccscope::transports {
namespace {

using test_support::SharedStore;
using test_support::ThreadBootstrap;

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  int b_created = 0;  // job B's ranks that reached their barrier (segments created, peers opened)
  int a_opened = 0;   // job A's ranks that opened their peers
  void waitFor(const int& n, int want) {
    std::unique_lock<std::mutex> l(mu);
    cv.wait_for(l, std::chrono::seconds(5), [&] { return n >= want; });
  }
  void bump(int& n) {
    std::lock_guard<std::mutex> l(mu);
    ++n;
    cv.notify_all();
  }
};

// One rank: connect, then one message each way with its peer; "" or what went wrong.
std::string rankRun(ThreadBootstrap& bs, char job) {
  auto t = makeShmTransport(TransportOptions{});
  core::Status s = t->connect(bs, core::Deadline::afterSeconds(10));
  if (!s.isOk()) return "connect: " + s.toString();
  core::HostBuffer buf(2048);
  auto reg = t->registerMemory(buf.data(), buf.size());
  if (!reg) return reg.status().toString();
  const int peer = 1 - bs.rank();
  std::memset(buf.data(), job + bs.rank(), 1024);
  std::memset(buf.data() + 1024, 0, 1024);
  auto r = t->postRecv(peer, 7, reg->region(), 1024, 1024);
  auto x = t->postSend(peer, 7, reg->region(), 0, 1024);
  if (!r || !x) return "post failed";
  s = t->wait(*x, core::Deadline::afterSeconds(3));
  core::Status rs = t->wait(*r, core::Deadline::afterSeconds(3));
  if (!s.isOk() || !rs.isOk()) return "exchange: " + s.toString() + " / " + rs.toString();
  for (int i = 0; i < 1024; ++i)
    if (buf.data()[1024 + i] != static_cast<char>(job + peer))
      return std::string("job ") + job + " rank " + std::to_string(bs.rank()) +
             " received another job's bytes";
  t->close();
  return "";
}

TEST(ShmJobNamesTest, TwoJobsWithTheSameTokenReachOnlyTheirOwnRanks) {
  const std::string token = "same-token-for-both-jobs";
  Gate gate;
  SharedStore store_a, store_b;
  auto hook_a = [&](const std::string& op, const std::string&) {
    if (op == "get") gate.waitFor(gate.b_created, 2);
    if (op == "barrier") gate.bump(gate.a_opened);
  };
  auto hook_b = [&](const std::string& op, const std::string&) {
    if (op != "barrier") return;
    gate.bump(gate.b_created);
    gate.waitFor(gate.a_opened, 2);
  };
  std::string why[4];
  std::vector<std::thread> ranks;
  ranks.reserve(4);
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      ThreadBootstrap bs(store_a, r, 2, token, hook_a);
      why[r] = rankRun(bs, 'A');
    });
  // Job B starts once job A created its segments (they are the first thing A publishes).
  for (;;) {
    std::lock_guard<std::mutex> l(store_a.mu);
    if (store_a.kv.size() >= 2) break;
  }
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      ThreadBootstrap bs(store_b, r, 2, token, hook_b);
      why[2 + r] = rankRun(bs, 'B');
    });
  for (auto& t : ranks) t.join();
  for (const std::string& w : why) EXPECT_EQ(w, "");
}

}  // namespace
}  // namespace ccscope::transports
