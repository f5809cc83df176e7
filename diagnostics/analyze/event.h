// Event: one observation from the logs (a rule match, or what a structured parser derived from
// several lines), with where it was seen and what it says about ranks, hosts and peers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "diagnostics/analyze/rule.h"
#include "reports/diagnosis.h"

namespace ccscope::diagnostics {

struct Event {
  const FindingSpec* spec = nullptr;
  std::string verdict;  // empty: spec->verdict
  int rank = -1;
  int other_rank = -1;  // the rank this one compared itself with (Rule::other_rank_after)
  std::string host;
  std::string peer;  // remote endpoint the line blames (IP, host or "rank N")
  bool has_time = false;
  double time = 0;
  int file_index = -1;
  uint64_t order = 0;  // (file index << 40) | line: position when no time is known
  std::vector<reports::Evidence> evidence;
};

// True when `a` is known to have happened before `b` (same clock or same file).
inline bool happenedBefore(bool a_has_time, double a_time, uint64_t a_order, bool b_has_time,
                           double b_time, uint64_t b_order) {
  if (a_has_time && b_has_time) return a_time < b_time;
  if ((a_order >> 40) == (b_order >> 40)) return a_order < b_order;
  return false;
}

}  // namespace ccscope::diagnostics
