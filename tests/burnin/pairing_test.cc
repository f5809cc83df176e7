#include "burnin/pairing.h"

#include <gtest/gtest.h>

#include <set>

namespace ccscope::burnin {
namespace {

// Every round disjoint, every pair of members exactly once, the lower rank first.
void expectCompleteAndDisjoint(const std::vector<Round>& rounds, const std::vector<int>& members) {
  std::set<Pair> seen;
  for (const Round& r : rounds) {
    std::set<int> busy;
    for (const Pair& p : r) {
      EXPECT_LT(p.first, p.second);
      EXPECT_TRUE(busy.insert(p.first).second) << "rank " << p.first << " twice in a round";
      EXPECT_TRUE(busy.insert(p.second).second) << "rank " << p.second << " twice in a round";
      EXPECT_TRUE(seen.insert(p).second) << p.first << "-" << p.second << " measured twice";
    }
  }
  EXPECT_EQ(seen.size(), members.size() * (members.size() - 1) / 2);
  for (const Pair& p : seen) {
    EXPECT_TRUE(std::count(members.begin(), members.end(), p.first));
    EXPECT_TRUE(std::count(members.begin(), members.end(), p.second));
  }
}

TEST(PairingTest, CircleMethodCoversEveryPairOnceInDisjointRounds) {
  for (int n = 2; n <= 13; ++n) {
    std::vector<Round> rounds = circleRounds(n);
    EXPECT_EQ(rounds.size(), static_cast<size_t>(n % 2 == 0 ? n - 1 : n)) << n;
    for (const Round& r : rounds) EXPECT_EQ(r.size(), static_cast<size_t>(n / 2)) << n;
    std::vector<int> all(n);
    for (int i = 0; i < n; ++i) all[i] = i;
    expectCompleteAndDisjoint(rounds, all);
  }
  EXPECT_TRUE(circleRounds(1).empty());
}

TEST(PairingTest, RandomRoundsAreDisjointMatchingsAndSeeded) {
  std::vector<Round> a = randomRounds(9, 5, 42), b = randomRounds(9, 5, 42),
                     c = randomRounds(9, 5, 7);
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (const Round& r : a) {
    EXPECT_EQ(r.size(), 4u);
    std::set<int> busy;
    for (const Pair& p : r)
      EXPECT_TRUE(busy.insert(p.first).second && busy.insert(p.second).second);
  }
}

const std::vector<std::string> kThreeHostsTwoEach = {"h0", "h0", "h1", "h1", "h2", "h2"};

TEST(PairingTest, HostScopeTakesOneRankPerHost) {
  std::vector<Round> rounds = planRounds(Scope::kHosts, kThreeHostsTwoEach, 0, 1);
  expectCompleteAndDisjoint(rounds, {0, 2, 4});
  EXPECT_EQ(unitLabels(Scope::kHosts, kThreeHostsTwoEach)[3], "h1");
}

TEST(PairingTest, RankScopeTakesEveryPairWithinHostsToo) {
  std::vector<Round> rounds = planRounds(Scope::kRanks, kThreeHostsTwoEach, 0, 1);
  expectCompleteAndDisjoint(rounds, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(unitLabels(Scope::kRanks, kThreeHostsTwoEach)[3], "rank 3 (h1)");
}

TEST(PairingTest, RailScopePairsLocalRankIWithLocalRankIElsewhere) {
  // Ranks interleaved across hosts, as round-robin launchers place them.
  const std::vector<std::string> hosts = {"a", "b", "c", "a", "b", "c"};
  std::vector<Round> rounds = planRounds(Scope::kRails, hosts, 0, 1);
  EXPECT_EQ(rounds.size(), 3u);  // two rails of three hosts, side by side
  std::set<Pair> all;
  for (const Round& r : rounds) {
    std::set<int> busy;
    for (const Pair& p : r) {
      EXPECT_TRUE(busy.insert(p.first).second && busy.insert(p.second).second);
      all.insert(p);
    }
  }
  EXPECT_EQ(all, (std::set<Pair>{{0, 1}, {0, 2}, {1, 2}, {3, 4}, {3, 5}, {4, 5}}));
  EXPECT_EQ(unitLabels(Scope::kRails, hosts)[4], "b/rail 1");
}

TEST(PairingTest, RingRoundsPairEachMemberWithTheNext) {
  // Six hosts of two ranks: the hosts' first ranks 0, 2, .. 10 in a ring of six links.
  std::vector<std::string> hosts;
  for (int h = 0; h < 6; ++h) hosts.insert(hosts.end(), 2, "h" + std::to_string(h));
  std::set<Pair> links;
  const std::vector<Round> rounds = ringRounds(Scope::kHosts, hosts);
  EXPECT_EQ(rounds.size(), 2u);
  for (const Round& r : rounds) {
    std::set<int> busy;
    for (const Pair& p : r) {
      EXPECT_TRUE(busy.insert(p.first).second && busy.insert(p.second).second);
      links.insert(p);
    }
  }
  EXPECT_EQ(links, (std::set<Pair>{{0, 2}, {2, 4}, {4, 6}, {6, 8}, {8, 10}, {0, 10}}));
  EXPECT_EQ(ringRounds(Scope::kRanks, {"a", "a", "a"}).size(), 3u);  // odd: three rounds
  EXPECT_EQ(ringRounds(Scope::kHosts, {"a", "b"}), (std::vector<Round>{{{0, 1}}}));
  EXPECT_TRUE(ringRounds(Scope::kHosts, {"a", "a"}).empty());  // one host: no link
  // Rails: a ring per rail, side by side.
  EXPECT_EQ(ringRounds(Scope::kRails, {"a", "b", "c", "a", "b", "c"}).size(), 3u);
}

TEST(PairingTest, PackRoundsKeepsEachRoundDisjoint) {
  std::vector<Round> rounds = packRounds({{0, 1}, {0, 2}, {1, 2}, {3, 4}});
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_EQ(rounds[0], (Round{{0, 1}, {3, 4}}));
}

TEST(PairingTest, ScopeNamesRoundTripAndBadOnesAreRefused) {
  for (Scope s : {Scope::kHosts, Scope::kRanks, Scope::kRails})
    EXPECT_EQ(*parseScope(scopeName(s)), s);
  EXPECT_FALSE(parseScope("switches").isOk());
}

}  // namespace
}  // namespace ccscope::burnin
