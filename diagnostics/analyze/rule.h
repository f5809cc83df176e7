// Rule: one log signature kept as data (diagnostics/rules/*.toml): keywords that gate it, a
// regular expression, the layer it points to, whether it is a root cause, a symptom or context,
// how specific it is (weight), a verdict and a next step. Capture groups can name the peer,
// rank, host or layer the line talks about; "{1}" in a verdict is replaced by group 1.
#pragma once

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "core/status.h"
#include "reports/diagnosis.h"

namespace ccscope::diagnostics {

// What a finding is, independent of where it was seen: shared by rule matches and by the
// findings the structured parsers and the cross-rank reasoning derive.
struct FindingSpec {
  std::string id;
  core::Layer layer = core::Layer::kNone;
  reports::FindingKind kind = reports::FindingKind::kContext;
  int weight = 0;  // 0..100: how specific the signature is to one cause
  std::string verdict;
  std::string next_step;
  // The rank it captures is a process that failed (a launcher's "first process to fail"): a
  // symptom naming no rank may take it (reasoner.cc).
  bool names_failed_process = false;
};

struct Rule {
  FindingSpec spec;
  std::vector<std::string> keywords;  // at least one must occur (case-insensitive)
  std::string pattern;
  std::shared_ptr<const std::regex> regex;
  int peer_group = 0;  // 0: none
  int rank_group = 0;
  // The text after which a line names the rank it compares its own (rank_group) with ("Rank 1
  // runs X, but Rank 0 runs Y"), searched in the whole line, past the regex's window: the
  // culprit is the rank every such line names, or both of one pair.
  std::string other_rank_after;
  int host_group = 0;
  int layer_group = 0;  // group holding a layer name (ccscope's own status lines)
  // Phases: a rule that `opens` a phase counts only if its file ends before a rule that
  // `closes` it and no file ends with it closed (the logs stop inside a rendezvous, before the
  // first result row, ...); with `one_host` only if all the logs name at most one host; with
  // `closed_by_rank` N (a phase only rank N prints the close of) only if rank N opened it here.
  std::string opens;
  std::vector<std::string> closes;
  bool one_host = false;
  int closed_by_rank = -1;
  // The signature is an operating system's error text that any caller prints ("No route to
  // host"): on a line that a rule naming the caller also matches, that rule decides the layer.
  bool errno_text = false;
  std::vector<std::string> examples;     // lines the rule must match
  std::vector<std::string> near_misses;  // lines it must not match
  std::string source;                    // file the rule came from
};

}  // namespace ccscope::diagnostics
