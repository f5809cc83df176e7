// Cross-rank reasoning: turns the aggregated findings into one Diagnosis.
//  - Root-cause-class findings outrank symptoms (watchdog timeouts, aborts, "remote error");
//    among root causes of similar specificity the one that happened first wins.
//  - Culprits: ranks of the winning finding; one host when all its ranks sit on one host; a
//    peer named by reporters on several hosts is the culprit itself; links reporter -> peer.
//  - With no finding at all, the failure lines' vocabulary or the phase the logs reached
//    (CueTracker) makes a best guess.
//  - With only symptoms, a collective timed out with no lower-layer error anywhere: the ranks
//    fell out of step (application), and the rank behind, if the progress counters name one.
#pragma once

#include "diagnostics/analyze/cue_tracker.h"
#include "diagnostics/analyze/finding_accumulator.h"
#include "reports/diagnosis.h"

namespace ccscope::diagnostics {

inline constexpr int kMinRootScore = 10;   // weaker "root" findings are only listed
inline constexpr int kEarlierWindow = 15;  // score gap within which earliest wins
inline constexpr size_t kMaxListedFindings = 40;
inline constexpr int kMinContextWeight = 5;  // context alone names a layer from this weight on

// A finding of this kind makes the verdict whatever else is found: no best guess is needed.
inline bool decides(const FindingSpec* s) {
  return s && (s->kind == reports::FindingKind::kSymptom ||
               (s->kind == reports::FindingKind::kRoot && s->weight >= kMinRootScore));
}

// `guess` decides (low confidence) when no finding does and a line read as a failure; without
// one either, nothing is conclusive.
reports::Diagnosis reason(const FindingAccumulator& acc, long files, long lines,
                          const CueTracker::Guess& guess = {});

// The culprit of one aggregated finding (exposed for tests).
reports::Culprit culpritOf(const FindingAggregate& a, const FindingAccumulator& acc);

}  // namespace ccscope::diagnostics
