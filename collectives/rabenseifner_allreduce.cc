// Rabenseifner allreduce (Rabenseifner 2004; Thakur, Rabenseifner & Gropp 2005): a
// recursive-halving reduce-scatter then a recursive-doubling allgather over the p = 2^k ranks
// left after the fold (power_of_two_fold.h). Each rank sends 2(p-1)/p of the buffer in 2 log2(p)
// messages: ring's bandwidth at tree-like latency.
//
// Reduce-scatter step j (partner distance p/2^(j+1)): the ranks' block range [lo, hi) halves;
// a rank sends the half its partner keeps and adds the partner's copy of the half it keeps into
// Output. New rank i ends owning block i (partOffset(count, p, i)). The allgather walks back,
// doubling the range each step, receiving straight into Output.
#include <algorithm>

#include "collectives/allreduce_schedules.h"
#include "collectives/power_of_two_fold.h"
#include "collectives/schedule_builder.h"

namespace ccscope::collectives {

namespace {

struct Blocks {
  uint64_t count;
  int parts;
  uint64_t offset(int i) const { return partOffset(count, parts, i); }
  uint64_t length(int lo, int hi) const { return offset(hi) - offset(lo); }
};

struct Ctx {
  ScheduleBuilder& b;
  const PowerOfTwoFold& f;
  Blocks blocks;
  uint64_t seg;
  uint32_t phase_tags;
  int me;  // new rank
};

// Leaves the sum of block `me` (of p) in Output.
void reduceScatter(const Ctx& c, Span acc) {
  int lo = 0, hi = c.f.pof2;
  for (int j = 0; j < c.f.rounds; ++j) {
    const int mask = c.f.pof2 >> (j + 1), mid = lo + mask;
    const int peer = c.f.realRank(c.me ^ mask);
    const bool upper = (c.me & mask) != 0;
    const int keep_lo = upper ? mid : lo, keep_hi = upper ? hi : mid;
    const int give_lo = upper ? lo : mid, give_hi = upper ? mid : hi;
    const uint32_t tag_base = static_cast<uint32_t>(1 + j) * c.phase_tags;
    Segments(c.blocks.length(give_lo, give_hi), c.seg)
        .forEach(c.blocks.offset(give_lo), [&](uint64_t g, uint64_t off, uint64_t len) {
          c.b.send(peer, tag_base + static_cast<uint32_t>(g), at(acc, off), len);
        });
    // The landing slot is scratch at the element's own offset: later steps land inside the
    // range this one reduced, and the builder orders each landing after that reduction.
    Segments(c.blocks.length(keep_lo, keep_hi), c.seg)
        .forEach(c.blocks.offset(keep_lo), [&](uint64_t g, uint64_t off, uint64_t len) {
          c.b.recv(peer, tag_base + static_cast<uint32_t>(g), {Buf::kScratch, off}, len);
          c.b.reduce({Buf::kOutput, off}, at(acc, off), {Buf::kScratch, off}, len);
        });
    acc = {Buf::kOutput, 0};
    lo = keep_lo;
    hi = keep_hi;
  }
}

void allgather(const Ctx& c) {
  int lo = c.me;
  for (int j = 0; j < c.f.rounds; ++j) {
    const int mask = 1 << j, theirs = lo ^ mask;
    const int peer = c.f.realRank(c.me ^ mask);
    const uint32_t tag_base = static_cast<uint32_t>(1 + c.f.rounds + j) * c.phase_tags;
    Segments(c.blocks.length(lo, lo + mask), c.seg)
        .forEach(c.blocks.offset(lo), [&](uint64_t g, uint64_t off, uint64_t len) {
          c.b.send(peer, tag_base + static_cast<uint32_t>(g), {Buf::kOutput, off}, len);
        });
    Segments(c.blocks.length(theirs, theirs + mask), c.seg)
        .forEach(c.blocks.offset(theirs), [&](uint64_t g, uint64_t off, uint64_t len) {
          c.b.recv(peer, tag_base + static_cast<uint32_t>(g), {Buf::kOutput, off}, len);
        });
    lo = std::min(lo, theirs);
  }
}

}  // namespace

Schedule rabenseifnerAllreduceSchedule(int rank, int ranks, uint64_t count, uint64_t segment_elems,
                                       bool avg) {
  if (ranks == 1) return copySchedule({.rank = rank, .count = count}, count);
  ScheduleBuilder b({.rank = rank, .ranks = ranks, .count = count});
  b.setScratch(count);
  const PowerOfTwoFold f(ranks);
  // Tags: phase * (segments of the buffer) + segment; phase 0 folds in, 1..rounds reduce-scatter,
  // rounds+1..2*rounds allgather, 2*rounds+1 folds out.
  const uint32_t phase_tags = static_cast<uint32_t>(Segments(count, segment_elems).count());
  FoldPlan plan{count, segment_elems, 0, {Buf::kScratch, 0}, {Buf::kOutput, 0}};
  foldIn(b, f, rank, plan);
  if (!f.extra(rank)) {
    const Ctx c{b, f, Blocks{count, f.pof2}, segment_elems, phase_tags, f.newRank(rank)};
    reduceScatter(c, f.foldPartner(rank) >= 0 ? Span{Buf::kOutput, 0} : Span{Buf::kInput, 0});
    if (avg)  // the owned block is final: scale it once, before it is passed on
      Segments(c.blocks.length(c.me, c.me + 1), segment_elems)
          .forEach(c.blocks.offset(c.me), [&](uint64_t, uint64_t off, uint64_t len) {
            b.scale({Buf::kOutput, off}, len);
          });
    allgather(c);
  }
  plan.tag_base = static_cast<uint32_t>(2 * f.rounds + 1) * phase_tags;
  foldOut(b, f, rank, plan);
  return b.finish();
}

}  // namespace ccscope::collectives
