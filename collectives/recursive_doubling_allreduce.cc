// Recursive doubling allreduce: in round k, new rank i and i ^ 2^k swap their whole partial sums
// and both add them, so after log2(p) rounds every rank holds the total; the fold
// (power_of_two_fold.h) covers other rank counts. One message per round: the algorithm of choice
// when a message costs more than its bytes.
//
// Hazards: round k receives into scratch slot k%2 and writes its sum to a buffer other than the
// one round k sends from (Output and an accumulator slot alternate, arranged so the last round
// writes Output), so a round never waits for its own send to drain. Segments of the buffer
// are independent: segment g of round k+1 leaves as soon as segment g of round k is reduced.
#include <algorithm>

#include "collectives/allreduce_schedules.h"
#include "collectives/power_of_two_fold.h"
#include "collectives/schedule_builder.h"

namespace ccscope::collectives {

Schedule recursiveDoublingAllreduceSchedule(int rank, int ranks, uint64_t count,
                                            uint64_t segment_elems, bool avg) {
  if (ranks == 1) return copySchedule({.rank = rank, .count = count}, count);
  ScheduleBuilder b({.rank = rank, .ranks = ranks, .count = count});
  b.setScratch(3 * count);  // two receive slots, one accumulator
  const Segments segs(count, segment_elems);
  const PowerOfTwoFold f(ranks);
  const int rounds = f.rounds;
  // Tags: phase * (segments of the buffer) + segment; phase 0 folds in, k+1 is round k, and
  // rounds+1 folds out. Both ends of a message know its phase and segment.
  const uint32_t phase_tags = static_cast<uint32_t>(segs.count());
  // The partial sum after k rounds lives in Output when rounds-k is even, else in the slot.
  auto sumAfter = [&](int k) {
    return (rounds - k) % 2 == 0 ? Span{Buf::kOutput, 0} : Span{Buf::kScratch, 2 * count};
  };
  FoldPlan plan{count, segment_elems, 0, {Buf::kScratch, count}, sumAfter(0)};
  foldIn(b, f, rank, plan);
  if (!f.extra(rank)) {
    Span acc = f.foldPartner(rank) >= 0 ? sumAfter(0) : Span{Buf::kInput, 0};
    const int me = f.newRank(rank);
    for (int k = 0; k < rounds; ++k) {
      const int peer = f.realRank(me ^ (1 << k));
      const Span landing{Buf::kScratch, (k % 2) * count}, next = sumAfter(k + 1);
      const uint32_t tag_base = static_cast<uint32_t>(k + 1) * phase_tags;
      segs.forEach(0, [&](uint64_t g, uint64_t off, uint64_t len) {
        const uint32_t tag = tag_base + static_cast<uint32_t>(g);
        b.send(peer, tag, at(acc, off), len);
        b.recv(peer, tag, at(landing, off), len);
        b.reduce(at(next, off), at(acc, off), at(landing, off), len);
      });
      acc = next;
    }
    if (avg)
      segs.forEach(0, [&](uint64_t, uint64_t off, uint64_t len) {
        b.scale({Buf::kOutput, off}, len);
      });
  }
  plan.tag_base = static_cast<uint32_t>(rounds + 1) * phase_tags;
  foldOut(b, f, rank, plan);
  return b.finish();
}

}  // namespace ccscope::collectives
