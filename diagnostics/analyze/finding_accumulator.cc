#include "diagnostics/analyze/finding_accumulator.h"

namespace ccscope::diagnostics {
namespace {
constexpr size_t kMaxKnownRanks = 1 << 20;
constexpr size_t kMaxFilesPerFinding = 4096;
}  // namespace

void FindingAccumulator::learnHost(int rank, const std::string& host) {
  if (rank < 0 || host.empty() || rank_hosts_.size() >= kMaxKnownRanks) return;
  rank_hosts_.try_emplace(rank, host);
}

std::string FindingAccumulator::hostOf(int rank) const {
  auto it = rank_hosts_.find(rank);
  return it == rank_hosts_.end() ? std::string() : it->second;
}

void FindingAccumulator::keepEvidence(FindingAggregate& a, const Event& e) {
  if (e.evidence.empty()) return;
  size_t at = a.evidence.size();
  // Insert before the first kept piece this event happened before; keep the earliest few.
  for (size_t i = 0; i < a.evidence.size(); ++i) {
    if (happenedBefore(e.has_time, e.time, e.order, a.evidence_time[i].first,
                       a.evidence_time[i].second, a.evidence_order[i])) {
      at = i;
      break;
    }
  }
  if (at >= kMaxEvidencePerFinding) return;
  for (const auto& ev : e.evidence) {
    a.evidence.insert(a.evidence.begin() + static_cast<long>(at), ev);
    a.evidence_time.insert(a.evidence_time.begin() + static_cast<long>(at), {e.has_time, e.time});
    a.evidence_order.insert(a.evidence_order.begin() + static_cast<long>(at), e.order);
    ++at;
  }
  const size_t cap = std::max(kMaxEvidencePerFinding, e.evidence.size());
  if (a.evidence.size() > cap) {
    a.evidence.resize(cap);
    a.evidence_time.resize(cap);
    a.evidence_order.resize(cap);
  }
}

void FindingAccumulator::add(const Event& e, const std::string& file_name) {
  auto it = map_.find(e.spec->id);
  if (it == map_.end()) {
    if (map_.size() >= kMaxFindings) return;
    it = map_.emplace(e.spec->id, FindingAggregate{}).first;
    it->second.spec = e.spec;
    it->second.verdict = e.verdict.empty() ? e.spec->verdict : e.verdict;
    it->second.has_time = e.has_time;
    it->second.first_time = e.time;
    it->second.first_order = e.order;
  }
  FindingAggregate& a = it->second;
  ++a.count;
  if (happenedBefore(e.has_time, e.time, e.order, a.has_time, a.first_time, a.first_order) ||
      (e.has_time && !a.has_time)) {
    a.has_time = e.has_time;
    a.first_time = e.time;
    a.first_order = e.order;
    if (!e.verdict.empty()) a.verdict = e.verdict;
  }
  if (e.rank >= 0 && a.ranks.size() < kMaxRanksPerFinding) {
    auto [r, fresh] = a.ranks.emplace(e.rank, e.host);
    if (!fresh && r->second.empty()) r->second = e.host;
  }
  if (e.rank >= 0 && e.other_rank >= 0 && a.pair_mentions.size() < kMaxRanksPerFinding) {
    ++a.rank_pairs;
    ++a.pair_mentions[e.rank];
    if (e.other_rank != e.rank) ++a.pair_mentions[e.other_rank];
  }
  if (!e.host.empty() && a.hosts.size() < kMaxHostsPerFinding) a.hosts.insert(e.host);
  if (!e.peer.empty() && (a.peers.size() < kMaxPeersPerFinding || a.peers.count(e.peer))) {
    std::string reporter = !e.host.empty() ? e.host
                           : e.rank >= 0   ? "rank " + std::to_string(e.rank)
                                           : file_name;
    auto& reporters = a.peers[e.peer];
    if (reporters.size() < kMaxHostsPerFinding) reporters.insert(std::move(reporter));
  }
  if (a.files.size() < kMaxFilesPerFinding) a.files.insert(file_name);
  keepEvidence(a, e);
}

}  // namespace ccscope::diagnostics
