// The standard fold that lets a power-of-two algorithm (recursive doubling, Rabenseifner) run on
// any rank count (MPICH; Thakur, Rabenseifner & Gropp 2005): with p the largest power of two
// <= n and rem = n - p, each even rank r < 2*rem hands its input to r+1 and sits out (an
// "extra" rank); the other p ranks run the algorithm as new ranks 0..p-1, and the odd ranks
// r < 2*rem hand the result back at the end.
#pragma once

#include <cstdint>

#include "collectives/schedule_builder.h"

namespace ccscope::collectives {

struct PowerOfTwoFold {
  int ranks = 1;
  int pof2 = 1;    // p
  int rem = 0;     // n - p
  int rounds = 0;  // log2(p)

  explicit PowerOfTwoFold(int n) : ranks(n) {
    while (pof2 * 2 <= n) pof2 *= 2, ++rounds;
    rem = n - pof2;
  }
  bool extra(int rank) const { return rank < 2 * rem && rank % 2 == 0; }
  // The rank this one exchanges fold messages with, or -1 when it takes no part in the fold.
  int foldPartner(int rank) const {
    return rank >= 2 * rem ? -1 : (rank % 2 == 0 ? rank + 1 : rank - 1);
  }
  int newRank(int rank) const { return rank < 2 * rem ? rank / 2 : rank - rem; }  // if !extra
  int realRank(int new_rank) const { return new_rank < rem ? 2 * new_rank + 1 : new_rank + rem; }
};

// Where a fold's messages go: tags are tag_base + segment (Segments(count, segment)); the receiving
// rank lands the extra rank's input at `landing` and writes input + landing to `sum` (both count
// elements long).
struct FoldPlan {
  uint64_t count = 0;
  uint64_t segment = 1;
  uint32_t tag_base = 0;
  Span landing{Buf::kScratch, 0};
  Span sum{Buf::kOutput, 0};
};

// Before the algorithm: extra ranks send their input, their partners reduce it into `sum`.
void foldIn(ScheduleBuilder& b, const PowerOfTwoFold& f, int rank, const FoldPlan& plan);
// After it: partners send the finished Output to the extra ranks' Output.
void foldOut(ScheduleBuilder& b, const PowerOfTwoFold& f, int rank, const FoldPlan& plan);

}  // namespace ccscope::collectives
