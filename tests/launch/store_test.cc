#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "launch/store_client.h"
#include "launch/store_server.h"

namespace ccscope::launch {
namespace {

using core::Deadline;

HostPort at(const StoreServer& s) { return {"127.0.0.1", s.port()}; }

TEST(StoreTest, RanksJoinExchangeKeysAndBarrier) {
  auto server = StoreServer::start("127.0.0.1", 0, "tok", 3);
  ASSERT_TRUE(server.isOk());
  std::vector<std::unique_ptr<StoreClient>> clients(3);
  std::vector<std::thread> ts;
  ts.reserve(3);
  for (int r = 0; r < 3; ++r)
    ts.emplace_back([&, r] {
      auto c = StoreClient::join(at(**server), "tok", r, 3, Deadline::afterSeconds(10));
      ASSERT_TRUE(c.isOk()) << c.status().toString();
      clients[r] = std::move(c.value());
    });
  for (auto& t : ts) t.join();
  ASSERT_TRUE(clients[1]->put("k", "v1").isOk());
  auto v = clients[2]->get("k", Deadline::afterSeconds(5));
  ASSERT_TRUE(v.isOk());
  EXPECT_EQ(*v, "v1");
  ts.clear();
  for (int r = 0; r < 3; ++r)
    ts.emplace_back(
        [&, r] { EXPECT_TRUE(clients[r]->barrier("b", Deadline::afterSeconds(5)).isOk()); });
  for (auto& t : ts) t.join();
}

TEST(StoreTest, WrongTokenIsRefused) {
  auto server = StoreServer::start("127.0.0.1", 0, "right", 1);
  ASSERT_TRUE(server.isOk());
  auto c = StoreClient::join(at(**server), "wrong", 0, 1, Deadline::afterSeconds(5));
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), core::Code::kInvalidArgument);
  EXPECT_NE(c.status().message().find("wrong job token"), std::string::npos);
}

TEST(StoreTest, RanksThatNeverJoinAreNamed) {
  auto server = StoreServer::start("127.0.0.1", 0, "tok", 3);
  ASSERT_TRUE(server.isOk());
  auto t0 = core::nowNs();
  auto c = StoreClient::join(at(**server), "tok", 0, 3, Deadline::afterSeconds(1));
  ASSERT_FALSE(c.isOk());
  EXPECT_LT((core::nowNs() - t0) / 1e9, 5.0);
  EXPECT_EQ(c.status().code(), core::Code::kDeadlineExceeded);
  EXPECT_NE(c.status().message().find("1 (not-joined), 2 (not-joined)"), std::string::npos)
      << c.status().message();
}

TEST(StoreTest, PortInUseIsAClearError) {
  auto a = StoreServer::start("127.0.0.1", 0, "t", 1);
  ASSERT_TRUE(a.isOk());
  auto b = StoreServer::start("127.0.0.1", (*a)->port(), "t", 1);
  ASSERT_FALSE(b.isOk());
  EXPECT_NE(b.status().message().find("already in use"), std::string::npos);
}

TEST(StoreTest, ARankThatDiesIsGoneAndOneThatSaysGoodbyeIsNot) {
  auto server = StoreServer::start("127.0.0.1", 0, "tok", 3);
  ASSERT_TRUE(server.isOk());
  HostPort hp = at(**server);
  // Rank 1 leaves cleanly, rank 2 dies (a real process exiting without the goodbye).
  pid_t pid = fork();
  if (pid == 0) {
    auto c = StoreClient::join(hp, "tok", 2, 3, Deadline::afterSeconds(5));
    if (c.isOk()) {
      // Leaked on purpose: the sockets stay open until _exit, and no destructor says goodbye.
      [[maybe_unused]] StoreClient* leaked = c.value().release();
    }
    _exit(c.isOk() ? 0 : 1);
  }
  std::unique_ptr<StoreClient> c1;
  std::thread t([&] {
    c1 = std::move(StoreClient::join(hp, "tok", 1, 3, Deadline::afterSeconds(5)).value());
  });
  auto c0 = StoreClient::join(hp, "tok", 0, 3, Deadline::afterSeconds(5));
  t.join();
  ASSERT_TRUE(c0.isOk());
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_EQ(WEXITSTATUS(st), 0);
  c1->finish();
  // The store notices the dropped connection asynchronously: poll for up to 2 s.
  Deadline settle = Deadline::afterSeconds(2);
  std::vector<RankHealth> table;
  do {
    auto t = (*c0)->health(Deadline::afterSeconds(2));
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    table = *t;
    ASSERT_EQ(table.size(), 3u);
    if (table[2].state == RankState::kGone && table[1].state == RankState::kDone) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (!settle.expired());
  EXPECT_EQ(table[2].state, RankState::kGone) << rankStateName(table[2].state);
  EXPECT_EQ(table[1].state, RankState::kDone) << rankStateName(table[1].state);
  EXPECT_EQ(table[0].state, RankState::kAlive) << rankStateName(table[0].state);
  // What the launcher saw end a rank reaches every rank that asks.
  EXPECT_EQ(table[2].end_signal, 0);
  (*server)->noteEndSignal(2, SIGKILL);
  auto after = (*c0)->health(Deadline::afterSeconds(2));
  ASSERT_TRUE(after.isOk()) << after.status().toString();
  EXPECT_EQ((*after)[2].end_signal, SIGKILL);
  EXPECT_EQ((*after)[1].end_signal, 0);
}

// A key that holds something other than a count: add() answers an error status, and the store
// keeps serving (a store thread that died would leave the get below waiting).
TEST(StoreTest, AddingToAValueThatIsNotACountIsAnError) {
  auto server = StoreServer::start("127.0.0.1", 0, "tok", 1);
  ASSERT_TRUE(server.isOk());
  auto c = StoreClient::join(at(**server), "tok", 0, 1, Deadline::afterSeconds(10));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  for (const char* bad : {"abc", "", "12abc", "99999999999999999999"}) {
    std::string key = std::string("counter/") + bad;
    ASSERT_TRUE((*c)->put(key, bad).isOk());
    auto n = (*c)->add(key, 1, Deadline::afterSeconds(5));
    ASSERT_FALSE(n.isOk()) << bad << " -> " << *n;
    EXPECT_EQ(n.status().code(), core::Code::kRemoteError) << n.status().toString();
    EXPECT_NE(n.status().message().find(key), std::string::npos) << n.status().message();
    auto v = (*c)->get(key, Deadline::afterSeconds(5));
    ASSERT_TRUE(v.isOk()) << v.status().toString();
    EXPECT_EQ(*v, bad);
  }
  auto overflow = (*c)->add("counter/big", INT64_MAX, Deadline::afterSeconds(5));
  ASSERT_TRUE(overflow.isOk()) << overflow.status().toString();
  EXPECT_FALSE((*c)->add("counter/big", 1, Deadline::afterSeconds(5)).isOk());
  auto n = (*c)->add("counter/good", 2, Deadline::afterSeconds(5));
  ASSERT_TRUE(n.isOk()) << n.status().toString();
  EXPECT_EQ(*n, 2);
}

// The key/value and the control connection are used from different threads at once (a
// barrier's get while the hang diagnosis asks for the health table); every answer still comes.
TEST(StoreTest, HealthAndGetFromTwoThreads) {
  auto server = StoreServer::start("127.0.0.1", 0, "tok", 1);
  ASSERT_TRUE(server.isOk());
  auto c = StoreClient::join(at(**server), "tok", 0, 1, Deadline::afterSeconds(10));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  ASSERT_TRUE((*c)->put("k", "v").isOk());
  constexpr int kRounds = 200;
  std::thread health([&] {
    for (int i = 0; i < kRounds; ++i) {
      auto t = (*c)->health(Deadline::afterSeconds(5));
      ASSERT_TRUE(t.isOk()) << t.status().toString();
      EXPECT_EQ(t->size(), 1u);
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    auto v = (*c)->get("k", Deadline::afterSeconds(5));
    ASSERT_TRUE(v.isOk()) << v.status().toString();
    EXPECT_EQ(*v, "v");
  }
  health.join();
}

}  // namespace
}  // namespace ccscope::launch
