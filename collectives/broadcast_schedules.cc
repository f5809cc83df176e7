// Broadcast schedules: pipelined chain, segmented binomial tree, scatter + ring allgather.
//
// Ranks are renumbered relative to the root (v = r - root mod n) so the root is virtual rank 0.
// Only the root reads its input (other inputs hold nothing); the root copies input to output,
// a no-op in place, and sends from its input, so no output write races a send.
#include <bit>

#include "collectives/movement_schedules.h"
#include "collectives/schedule_builder.h"

namespace ccscope::collectives {

namespace {

struct Relative {
  int n, root;
  int virt(int r) const { return ringMod(r - root, n); }
  int real(int v) const { return ringMod(v + root, n); }
};

// Binomial tree over virtual ranks: the parent clears the lowest set bit; the children of v
// are v + m for every power of two m below v's lowest set bit (all m < n for the root),
// largest subtree first.
int lowBit(int v, int n) {
  return v == 0 ? static_cast<int>(std::bit_ceil(static_cast<unsigned>(n))) : v & -v;
}
int parentOf(int v) { return v - (v & -v); }
int subtreeEnd(int v, int n) { return std::min(n, v + lowBit(v, n)); }
std::vector<int> childrenOf(int v, int n) {
  std::vector<int> kids;
  for (int m = lowBit(v, n) / 2; m >= 1; m /= 2)
    if (v + m < n) kids.push_back(v + m);
  return kids;
}

}  // namespace

Schedule chainBroadcastSchedule(const ScheduleParams& p) {
  const int n = p.ranks;
  if (n == 1) return copySchedule(p, p.count);
  const Relative rel{n, p.root};
  const int v = rel.virt(p.rank);
  ScheduleBuilder b(p);
  if (v == 0) b.copy(atOut(0), atIn(0), p.count);
  const int next = rel.real(v + 1), prev = rel.real(v - 1);
  Segments(p.count, p.segment_elems).forEach(0, [&](uint64_t g, uint64_t off, uint64_t len) {
    const auto tag = static_cast<uint32_t>(g);
    if (v != 0) b.recv(prev, tag, atOut(off), len);
    if (v < n - 1) b.send(next, tag, v == 0 ? atIn(off) : atOut(off), len);
  });
  return b.finish();
}

Schedule binomialBroadcastSchedule(const ScheduleParams& p) {
  const int n = p.ranks;
  if (n == 1) return copySchedule(p, p.count);
  const Relative rel{n, p.root};
  const int v = rel.virt(p.rank);
  ScheduleBuilder b(p);
  if (v == 0) b.copy(atOut(0), atIn(0), p.count);
  const std::vector<int> kids = childrenOf(v, n);
  Segments(p.count, p.segment_elems).forEach(0, [&](uint64_t g, uint64_t off, uint64_t len) {
    const auto tag = static_cast<uint32_t>(g);
    if (v != 0) b.recv(rel.real(parentOf(v)), tag, atOut(off), len);
    for (int kid : kids) b.send(rel.real(kid), tag, v == 0 ? atIn(off) : atOut(off), len);
  });
  return b.finish();
}

namespace {

constexpr uint32_t kScatterTag = 0;  // ring step k uses kScatterTag + 1 + k

// Piece j of the buffer belongs to virtual rank j; a subtree's pieces are contiguous.
struct Pieces {
  uint64_t count;
  int n;
  uint64_t at(int j) const { return partOffset(count, n, j); }
  uint64_t len(int first, int end) const { return at(end) - at(first); }
};

// Whether virtual rank v holds piece j after the scatter.
bool holds(int v, int j, int n) { return v == 0 || (j >= v && j < subtreeEnd(v, n)); }

}  // namespace

Schedule scatterAllgatherBroadcastSchedule(const ScheduleParams& p) {
  const int n = p.ranks;
  if (n == 1) return copySchedule(p, p.count);
  const Relative rel{n, p.root};
  const int v = rel.virt(p.rank);
  const Pieces pc{p.count, n};
  ScheduleBuilder b(p);
  if (v == 0) b.copy(atOut(0), atIn(0), p.count);
  auto from = [&](uint64_t off) { return v == 0 ? atIn(off) : atOut(off); };
  // Scatter: v receives the pieces of its subtree and passes each child the child's subtree.
  if (v != 0) {
    const int end = subtreeEnd(v, n);
    b.recv(rel.real(parentOf(v)), kScatterTag, atOut(pc.at(v)), pc.len(v, end));
  }
  for (int kid : childrenOf(v, n))
    b.send(rel.real(kid), kScatterTag, from(pc.at(kid)), pc.len(kid, subtreeEnd(kid, n)));
  // Ring allgather over virtual ranks, skipping pieces the receiver already holds: step k
  // passes piece v-k (held, or received at step k-1) to v+1 and receives piece v-1-k.
  const int right = ringMod(v + 1, n), left = ringMod(v - 1, n);
  for (int k = 0; k < n - 1; ++k) {
    const uint32_t tag = kScatterTag + 1 + static_cast<uint32_t>(k);
    const int js = ringMod(v - k, n), jr = ringMod(v - 1 - k, n);
    if (!holds(right, js, n)) b.send(rel.real(right), tag, from(pc.at(js)), pc.len(js, js + 1));
    if (!holds(v, jr, n)) b.recv(rel.real(left), tag, atOut(pc.at(jr)), pc.len(jr, jr + 1));
  }
  return b.finish();
}

}  // namespace ccscope::collectives
