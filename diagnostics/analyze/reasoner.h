// Cross-rank reasoning: turns the aggregated findings into one Diagnosis.
//  - Root-cause-class findings outrank symptoms (watchdog timeouts, aborts, "remote error");
//    among root causes of similar specificity the one that happened first wins.
//  - Culprits: ranks of the winning finding; one host when all its ranks sit on one host; a
//    peer named by reporters on several hosts is the culprit itself; links reporter -> peer.
//  - With only symptoms, a collective timed out with no lower-layer error anywhere: the ranks
//    fell out of step (application), and the rank behind, if the progress counters name one.
#pragma once

#include "diagnostics/analyze/finding_accumulator.h"
#include "reports/diagnosis.h"

namespace ccscope::diagnostics {

inline constexpr int kMinRootScore = 10;   // weaker "root" findings are only listed
inline constexpr int kEarlierWindow = 15;  // score gap within which earliest wins
inline constexpr size_t kMaxListedFindings = 40;
inline constexpr int kMinContextWeight = 5;  // context alone names a layer from this weight on

reports::Diagnosis reason(const FindingAccumulator& acc, long files, long lines);

// The culprit of one aggregated finding (exposed for tests).
reports::Culprit culpritOf(const FindingAggregate& a, const FindingAccumulator& acc);

}  // namespace ccscope::diagnostics
