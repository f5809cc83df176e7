// How long each phase of `ccscope diagnose` may wait, in one table that rank 0 (gathering every
// rank's results) and the other ranks (waiting for rank 0's plan of the next phase) both read.
// A wait is probe deadlines t × (base + per_rank × ranks + per_transport × transports): probes
// that run one pair or one hop after another grow with the ranks, and a plan comes only after
// rank 0 has gathered the phase before it, so a plan's wait covers that gathering too.
#pragma once

#include <array>

namespace ccscope::app {

enum class DiagPhase {
  kJoin,          // joining the rendezvous
  kGather,        // rank 0 gathering one probe's results from every rank
  kHosts,         // a rank reading every rank's host name
  kConnect,       // connecting a transport the probes run over
  kClockPlan,     // rank 0's list of ranks to ping, posted after it gathered the tcp connects
  kClockAnswer,   // a rank answering rank 0's pings, which go to one rank after another
  kPairs,         // rank 0 gathering pair measurements: pairs run one after another
  kPairPlan,      // rank 0's list of slow pairs to measure again, posted after the gathering
  kHopPlan,       // rank 0's list of rings to bisect, after the pairs and every allreduce
  kHops,          // rank 0 gathering ring hops: hops run one after another, twice
  kFreshConnect,  // connecting a fresh transport for bisection
  kVerdict,       // a rank waiting for rank 0's verdict, which may still gather a late rank's hops
};

struct DiagPhaseWait {
  DiagPhase phase;
  double base, per_rank, per_transport;
};

inline constexpr std::array<DiagPhaseWait, 12> kDiagPhaseWaits{{
    {DiagPhase::kJoin, 2, 0, 0},
    {DiagPhase::kGather, 2, 0, 0},
    {DiagPhase::kHosts, 1, 0, 0},
    {DiagPhase::kConnect, 1, 0, 0},
    {DiagPhase::kClockPlan, 3, 0, 0},
    {DiagPhase::kClockAnswer, 1, 1, 0},
    {DiagPhase::kPairs, 1, 1, 0},
    {DiagPhase::kPairPlan, 3, 1, 0},
    {DiagPhase::kHopPlan, 4, 1, 2},
    {DiagPhase::kHops, 3, 2, 0},
    {DiagPhase::kFreshConnect, 2, 0, 0},
    {DiagPhase::kVerdict, 6, 2, 0},
}};

// Seconds a phase may wait with probe deadline `probe_s`, `ranks` ranks and `transports`
// transports under test.
constexpr double diagPhaseSeconds(DiagPhase p, double probe_s, int ranks, int transports = 0) {
  for (const DiagPhaseWait& w : kDiagPhaseWaits)
    if (w.phase == p) return probe_s * (w.base + w.per_rank * ranks + w.per_transport * transports);
  return probe_s;
}

static_assert(diagPhaseSeconds(DiagPhase::kPairPlan, 1, 8) >
                  diagPhaseSeconds(DiagPhase::kPairs, 1, 8),
              "a plan's wait covers rank 0's gathering before it");
static_assert(diagPhaseSeconds(DiagPhase::kVerdict, 1, 8) >
                  diagPhaseSeconds(DiagPhase::kHops, 1, 8),
              "the verdict's wait covers rank 0's last gathering");

}  // namespace ccscope::app
