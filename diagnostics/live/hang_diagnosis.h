// Live hang diagnosis: from what the store knows of every rank (gone, frozen, never joined,
// alive with a progress snapshot) and what this rank saw fail, name the layer and the culprit
// (docs/architecture.md, "Diagnosis layers"): a rank gone or stopped, ranks that disagree on
// the collective, the head of the wait-for graph, or a link between two hosts that stopped
// carrying data.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "launch/rank_health.h"
#include "reports/diagnosis.h"

namespace ccscope::diagnostics {

struct HangInputs {
  int self = 0;
  core::Status failure;                   // what this rank saw
  std::vector<launch::RankHealth> table;  // from the store; empty when it could not be asked
  std::string store_error;                // why the store could not be asked
  std::string store_host;                 // the rendezvous address (to tell "rank 0 died" from
  std::string self_host;                  // "this host lost its network")
  std::vector<std::string> hosts;         // per rank, when known
  // Whether a host still answers TCP (injected so tests need no network).
  std::function<bool(const std::string& addr)> reachable;
};

reports::Diagnosis diagnoseHang(const HangInputs& in);
// A few lines for stderr: layer, verdict, culprit, evidence, next step.
std::string renderDiagnosis(const reports::Diagnosis& d);

}  // namespace ccscope::diagnostics
