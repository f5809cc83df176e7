// Which ranks measure each other in `ccscope pairs`: rounds of disjoint pairs, so that every
// link of a round runs at once and none shares an endpoint with another.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace ccscope::burnin {

using Pair = std::pair<int, int>;  // two ranks, the lower first
using Round = std::vector<Pair>;

enum class Scope { kHosts, kRanks, kRails };
core::Result<Scope> parseScope(const std::string& s);
const char* scopeName(Scope s);

// The circle method over n members: n-1 rounds of n/2 pairs (n even), or n rounds with one
// member idle each (n odd); every pair exactly once. Members are indices 0..n-1.
std::vector<Round> circleRounds(int n);
// `k` rounds, each a random perfect matching of n members (one idle when n is odd), seeded.
std::vector<Round> randomRounds(int n, int k, uint64_t seed);

// Rounds of rank pairs for a scope, from each rank's host label (hosts[r]):
//   hosts: the lowest rank of every host, one per host (the NIC path);
//   ranks: every pair of ranks, within a host too;
//   rails: local rank i with local rank i of every other host (local rank = order among the
//          ranks of its host), all rails at once.
// rounds_k > 0 takes k random rounds instead of all of them.
std::vector<Round> planRounds(Scope scope, const std::vector<std::string>& hosts, int rounds_k,
                              uint64_t seed);
// The ranks a scope measures, in groups that pair only among themselves: one group (hosts:
// the lowest rank of each host; ranks: all), or one per rail.
std::vector<std::vector<int>> scopeGroups(Scope scope, const std::vector<std::string>& hosts);
// Each member with the next of its group, the last with the first: n links per group of n
// (one for two), in two or three rounds. The soak's `links = "ring"`.
std::vector<Round> ringRounds(Scope scope, const std::vector<std::string>& hosts);
// The unit each rank stands for in the matrix: its host (hosts), itself (ranks), or its host and
// rail (rails).
std::vector<std::string> unitLabels(Scope scope, const std::vector<std::string>& hosts);

// Disjoint rounds packing the given pairs greedily (for retests).
std::vector<Round> packRounds(const std::vector<Pair>& pairs);

}  // namespace ccscope::burnin
