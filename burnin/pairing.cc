#include "burnin/pairing.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>

namespace ccscope::burnin {

core::Result<Scope> parseScope(const std::string& s) {
  if (s == "hosts") return Scope::kHosts;
  if (s == "ranks") return Scope::kRanks;
  if (s == "rails") return Scope::kRails;
  return core::Status(core::Code::kInvalidArgument,
                      fmt::format("--scope takes hosts, ranks or rails, not '{}'", s));
}

const char* scopeName(Scope s) {
  switch (s) {
    case Scope::kHosts:
      return "hosts";
    case Scope::kRanks:
      return "ranks";
    case Scope::kRails:
      return "rails";
  }
  return "?";
}

// Member 0 stays put while the others rotate; with n odd a phantom member makes n even and
// whoever meets it sits the round out.
std::vector<Round> circleRounds(int n) {
  std::vector<Round> rounds;
  if (n < 2) return rounds;
  const int m = n % 2 == 0 ? n : n + 1;
  std::vector<int> ring(m);
  std::iota(ring.begin(), ring.end(), 0);
  for (int r = 0; r < m - 1; ++r) {
    Round round;
    for (int i = 0; i < m / 2; ++i) {
      int a = ring[i], b = ring[m - 1 - i];
      if (a >= n || b >= n) continue;
      round.emplace_back(std::min(a, b), std::max(a, b));
    }
    rounds.push_back(std::move(round));
    std::rotate(ring.begin() + 1, ring.end() - 1, ring.end());
  }
  return rounds;
}

std::vector<Round> randomRounds(int n, int k, uint64_t seed) {
  std::vector<Round> rounds;
  if (n < 2) return rounds;
  std::mt19937_64 rng(seed);
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  for (int r = 0; r < k; ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    Round round;
    for (int i = 0; i + 1 < n; i += 2)
      round.emplace_back(std::min(order[i], order[i + 1]), std::max(order[i], order[i + 1]));
    rounds.push_back(std::move(round));
  }
  return rounds;
}

namespace {

// Ranks grouped by host label, in order of first appearance; each group in rank order.
std::vector<std::vector<int>> ranksByHost(const std::vector<std::string>& hosts) {
  std::map<std::string, size_t> index;
  std::vector<std::vector<int>> groups;
  for (int r = 0; r < static_cast<int>(hosts.size()); ++r) {
    auto [it, fresh] = index.emplace(hosts[r], groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(r);
  }
  return groups;
}

std::vector<Round> roundsOver(const std::vector<int>& members, int rounds_k, uint64_t seed) {
  const int n = static_cast<int>(members.size());
  std::vector<Round> rounds = rounds_k > 0 ? randomRounds(n, rounds_k, seed) : circleRounds(n);
  for (Round& round : rounds)
    for (Pair& p : round) p = {members[p.first], members[p.second]};
  return rounds;
}

}  // namespace

std::vector<std::vector<int>> scopeGroups(Scope scope, const std::vector<std::string>& hosts) {
  const std::vector<std::vector<int>> groups = ranksByHost(hosts);
  if (scope == Scope::kRanks) {
    std::vector<int> all(hosts.size());
    std::iota(all.begin(), all.end(), 0);
    return {all};
  }
  if (scope == Scope::kHosts) {
    std::vector<int> firsts;
    firsts.reserve(groups.size());
    for (const auto& g : groups) firsts.push_back(g.front());
    return {firsts};
  }
  // Rails: rail i is the i-th rank of every host that has one.
  size_t rails = 0;
  for (const auto& g : groups) rails = std::max(rails, g.size());
  std::vector<std::vector<int>> out(rails);
  for (size_t i = 0; i < rails; ++i)
    for (const auto& g : groups)
      if (i < g.size()) out[i].push_back(g[i]);
  return out;
}

std::vector<Round> planRounds(Scope scope, const std::vector<std::string>& hosts, int rounds_k,
                              uint64_t seed) {
  // Groups (rails) run side by side: round r of each group together.
  std::vector<Round> merged;
  uint64_t i = 0;
  for (const std::vector<int>& group : scopeGroups(scope, hosts)) {
    std::vector<Round> rounds = roundsOver(group, rounds_k, seed + i++);
    if (merged.size() < rounds.size()) merged.resize(rounds.size());
    for (size_t r = 0; r < rounds.size(); ++r)
      merged[r].insert(merged[r].end(), rounds[r].begin(), rounds[r].end());
  }
  return merged;
}

std::vector<Round> ringRounds(Scope scope, const std::vector<std::string>& hosts) {
  std::vector<Pair> pairs;
  for (const std::vector<int>& g : scopeGroups(scope, hosts)) {
    const size_t n = g.size();
    if (n < 2) continue;
    for (size_t i = 0; i < (n == 2 ? 1 : n); ++i)
      pairs.emplace_back(std::min(g[i], g[(i + 1) % n]), std::max(g[i], g[(i + 1) % n]));
  }
  return packRounds(pairs);
}

std::vector<std::string> unitLabels(Scope scope, const std::vector<std::string>& hosts) {
  if (scope == Scope::kHosts) return hosts;
  std::vector<std::string> out(hosts.size());
  if (scope == Scope::kRanks) {
    for (size_t r = 0; r < hosts.size(); ++r) out[r] = fmt::format("rank {} ({})", r, hosts[r]);
    return out;
  }
  for (const auto& g : ranksByHost(hosts))  // rails: host and rail, "node3/rail 1"
    for (size_t i = 0; i < g.size(); ++i) out[g[i]] = fmt::format("{}/rail {}", hosts[g[i]], i);
  return out;
}

std::vector<Round> packRounds(const std::vector<Pair>& pairs) {
  std::vector<Round> rounds;
  std::vector<std::vector<int>> busy;  // per round: the ranks already in it
  for (const Pair& p : pairs) {
    size_t r = 0;
    for (; r < rounds.size(); ++r) {
      const auto& b = busy[r];
      if (std::find(b.begin(), b.end(), p.first) == b.end() &&
          std::find(b.begin(), b.end(), p.second) == b.end())
        break;
    }
    if (r == rounds.size()) {
      rounds.emplace_back();
      busy.emplace_back();
    }
    rounds[r].push_back(p);
    busy[r].push_back(p.first);
    busy[r].push_back(p.second);
  }
  return rounds;
}

}  // namespace ccscope::burnin
