// NCCL's double binary tree allreduce (Sanders, Speck & Träff 2009; NCCL 2.4): two binary trees
// in which each rank is a leaf in one and interior in the other, each reducing half the buffer
// to its root and broadcasting it back. A pipelined tree has log-depth latency at
// near-ring bandwidth; two complementary trees keep every rank's links and reductions busy.
//
// Segment g of tree t: children's partial sums land in scratch slot c (at the element's offset),
// an interior rank adds its input and passes the partial up from slot 0, the root writes the
// total (scaled for avg) into Output and it flows down into every Output. Each segment depends
// only on itself, so the broadcast of g runs while g+1 is still being reduced.
#include <algorithm>

#include "collectives/allreduce_schedules.h"
#include "collectives/schedule_builder.h"

namespace ccscope::collectives {

namespace {

// ncclGetBtree: the lowest set bit of a rank fixes its level; rank 0 is the root with one child.
TreeLinks binaryTree(int rank, int ranks) {
  TreeLinks t;
  int bit = 1;
  while (bit < ranks && !(bit & rank)) bit <<= 1;
  if (rank == 0) {
    if (ranks > 1) t.children[1] = bit >> 1;
    return t;
  }
  t.parent = (rank ^ bit) | (bit << 1);
  if (t.parent >= ranks) t.parent = rank ^ bit;
  int low = bit >> 1;
  if (low) t.children[0] = rank - low;
  while (low && rank + low >= ranks) low >>= 1;  // pull the second child in bounds
  if (low) t.children[1] = rank + low;
  return t;
}

struct Half {
  uint64_t offset, length;
};

struct TreeCtx {
  ScheduleBuilder& b;
  const std::array<TreeLinks, 2>& trees;
  std::array<Half, 2> halves;
  uint64_t count, seg;
  bool avg;
};

// Direction 0 is up (reduce), 1 is down (broadcast); both ends know (segment, tree, direction).
uint32_t tag(uint64_t g, int t, int dir) { return static_cast<uint32_t>((g * 2 + t) * 2 + dir); }

void reduceUp(const TreeCtx& c, int t, uint64_t g, uint64_t off, uint64_t len) {
  const TreeLinks& links = c.trees[t];
  Span landed[2];
  int n = 0;
  for (int k = 0; k < 2; ++k) {
    if (links.children[k] < 0) continue;
    landed[n] = Span{Buf::kScratch, k * c.count + off};
    c.b.recv(links.children[k], tag(g, t, 0), landed[n++], len);
  }
  const Span input{Buf::kInput, off};
  if (n == 0) {  // a leaf (never the root: n >= 2 ranks) passes its input up as is
    c.b.send(links.parent, tag(g, t, 0), input, len);
    return;
  }
  const Span sum = links.parent < 0 ? Span{Buf::kOutput, off} : landed[0];
  Span acc = input;
  for (int k = 0; k < n; ++k) {
    c.b.reduce(sum, acc, landed[k], len);
    acc = sum;
  }
  if (links.parent >= 0)
    c.b.send(links.parent, tag(g, t, 0), sum, len);
  else if (c.avg)
    c.b.scale(sum, len);
}

void broadcastDown(const TreeCtx& c, int t, uint64_t g, uint64_t off, uint64_t len) {
  const TreeLinks& links = c.trees[t];
  const Span out{Buf::kOutput, off};
  if (links.parent >= 0) c.b.recv(links.parent, tag(g, t, 1), out, len);
  for (int child : links.children)
    if (child >= 0) c.b.send(child, tag(g, t, 1), out, len);
}

template <class F>
void onSegment(const TreeCtx& c, int t, uint64_t g, F&& f) {
  const Half& h = c.halves[t];
  const Segments segs(h.length, c.seg);
  if (g < segs.count()) f(c, t, g, h.offset + segs.offset(g), segs.size(g));
}

}  // namespace

std::array<TreeLinks, 2> doubleBinaryTree(int rank, int ranks) {
  std::array<TreeLinks, 2> out{binaryTree(rank, ranks), {}};
  // Tree 1: the mirror (n even) or the shift by one (n odd) of tree 0.
  const bool shift = ranks % 2 == 1;
  auto to = [&](int r) { return r < 0 ? -1 : shift ? (r + 1) % ranks : ranks - 1 - r; };
  const TreeLinks src = binaryTree(shift ? (rank - 1 + ranks) % ranks : ranks - 1 - rank, ranks);
  out[1].parent = to(src.parent);
  out[1].children = {to(src.children[0]), to(src.children[1])};
  return out;
}

Schedule treeAllreduceSchedule(int rank, int ranks, uint64_t count, uint64_t segment_elems,
                               bool avg) {
  if (ranks == 1) return copySchedule({.rank = rank, .count = count}, count);
  ScheduleBuilder b({.rank = rank, .ranks = ranks, .count = count});
  b.setScratch(2 * count);  // a landing slot per child
  const auto trees = doubleBinaryTree(rank, ranks);
  const uint64_t mid = partOffset(count, 2, 1);
  const TreeCtx c{b, trees, {Half{0, mid}, Half{mid, count - mid}}, count, segment_elems, avg};
  const uint64_t segs = Segments(mid, c.seg).count();  // half 0 is the longer one
  // Segment g's broadcast is emitted after segment g+1's reduction: per-peer messages are posted
  // in schedule order, and where one tree's up-link is the other's down-link this lets the next
  // reduction start before the last broadcast is ready.
  for (uint64_t tick = 0; tick <= segs; ++tick) {
    for (int t = 0; t < 2 && tick < segs; ++t) onSegment(c, t, tick, reduceUp);
    for (int t = 0; t < 2 && tick > 0; ++t) onSegment(c, t, tick - 1, broadcastDown);
  }
  return b.finish();
}

}  // namespace ccscope::collectives
