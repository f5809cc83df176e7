// FindingAccumulator: folds events into one aggregate per finding id with bounded memory:
// counts, the earliest occurrence, the ranks and hosts involved, the peers named and by whom,
// and a few evidence lines. Millions of matching lines cost a counter, not a list.
#pragma once

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "diagnostics/analyze/event.h"

namespace ccscope::diagnostics {

inline constexpr size_t kMaxEvidencePerFinding = 5;
inline constexpr size_t kMaxRanksPerFinding = 16384;
inline constexpr size_t kMaxHostsPerFinding = 4096;
inline constexpr size_t kMaxPeersPerFinding = 1024;
inline constexpr size_t kMaxFindings = 4096;

struct FindingAggregate {
  const FindingSpec* spec = nullptr;
  std::string verdict;
  long count = 0;
  bool has_time = false;
  double first_time = 0;
  uint64_t first_order = 0;
  std::map<int, std::string> ranks;                    // rank -> host ("" when unknown)
  long rank_pairs = 0;                                 // events naming a rank and another
  std::map<int, long> pair_mentions;                   // rank -> pairs that name it
  std::set<std::string> hosts;                         // hosts seen, ranks or not
  std::map<std::string, std::set<std::string>> peers;  // peer -> reporters (host or rank)
  std::set<std::string> files;
  std::vector<reports::Evidence> evidence;             // earliest few
  std::vector<std::pair<bool, double>> evidence_time;  // parallel to evidence
  std::vector<uint64_t> evidence_order;
};

class FindingAccumulator {
 public:
  void add(const Event& e, const std::string& file_name);
  const std::unordered_map<std::string, FindingAggregate>& aggregates() const { return map_; }
  // Rank -> host as learned from any line (NCCL headers, syslog), consulted for the culprit.
  void learnHost(int rank, const std::string& host);
  std::string hostOf(int rank) const;

 private:
  void keepEvidence(FindingAggregate& a, const Event& e);
  std::unordered_map<std::string, FindingAggregate> map_;
  std::unordered_map<int, std::string> rank_hosts_;
};

}  // namespace ccscope::diagnostics
