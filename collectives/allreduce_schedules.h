// The allreduce schedules beyond the ring (schedule.h): recursive doubling, Rabenseifner and
// NCCL's double binary tree, plus the rank structures they are built on (the power-of-two fold
// and the two trees), exposed so tests can derive each algorithm's expected traffic.
//
// Every builder supports any rank count >= 1, any element count (including 0 and fewer elements
// than ranks), in place (Input and Output the same buffer) and out of place, and `avg` (each
// element scaled exactly once, on the final sum, before it is passed on).
#pragma once

#include <array>
#include <cstdint>

#include "collectives/power_of_two_fold.h"
#include "collectives/schedule.h"

namespace ccscope::collectives {

// Recursive doubling: after the fold, log2(p) rounds in which partners (new rank ^ 2^k) exchange
// the whole buffer and both reduce it. Latency-optimal: log2(p) messages per rank (two more
// for ranks in the fold). Elements sent per rank: log2(p)*S, plus S for each rank in the fold
// (the extra rank sends its input, its partner sends the result back).
Schedule recursiveDoublingAllreduceSchedule(int rank, int ranks, uint64_t count,
                                            uint64_t segment_elems, bool avg);

// Rabenseifner: after the fold, a recursive-halving reduce-scatter (partner distance p/2 down to
// 1; new rank i ends owning block i of p) and a recursive-doubling allgather back.
// Elements sent per rank: (S - |own block|) + sum over steps j of |the 2^j blocks held|, i.e.
// exactly 2(p-1)/p*S when p divides S; S more for each rank in the fold.
Schedule rabenseifnerAllreduceSchedule(int rank, int ranks, uint64_t count, uint64_t segment_elems,
                                       bool avg);

// One rank's place in a binary tree: parent -1 at the root, children -1 when absent.
struct TreeLinks {
  int parent = -1;
  std::array<int, 2> children{-1, -1};
  int childCount() const { return (children[0] >= 0) + (children[1] >= 0); }
};

// NCCL's double binary tree (ncclGetDtree): tree 0 is the in-order binary tree rooted at rank 0
// in which odd ranks are leaves; tree 1 is its mirror (n even) or its shift by one (n odd), so a
// rank that is a leaf in one tree is interior in the other (for odd n, except rank 0: the root
// of tree 0 with one child, interior in tree 1 as well).
std::array<TreeLinks, 2> doubleBinaryTree(int rank, int ranks);

// Double binary tree allreduce: tree t reduces half t of the buffer (partOffset(count, 2, t))
// up to its root and broadcasts it back down, segment by segment, so the broadcast of one
// segment overlaps the reduction of the next. The root of each tree scales its half for avg.
// Elements sent by rank r: sum over t of H_t * ([r is not root of t] + children_t(r)) <= 2S+1;
// over all ranks exactly 2(n-1)S (each tree edge carries its half up once and down once).
Schedule treeAllreduceSchedule(int rank, int ranks, uint64_t count, uint64_t segment_elems,
                               bool avg);

}  // namespace ccscope::collectives
