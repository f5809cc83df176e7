// The collectives ccscope runs, and the buffer geometry of each (element counts of the input and
// output buffers, and where input and output sit inside the receive buffer when in place). The
// "count" of a collective follows nccl-tests: the element count of its larger buffer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ccscope::collectives {

enum class Collective {
  kAllreduce,
  kReduceScatter,
  kAllgather,
  kAlltoall,
  kAlltoallv,
  kBroadcast,
  kSendrecv
};

const char* collectiveName(Collective c);
core::Result<Collective> parseCollective(const std::string& s);
std::string collectiveNames();
bool isReduction(Collective c);
// busbw = algbw * busbwFactor(c, ranks): nccl-tests' definitions, so numbers compare. Allreduce
// 2(n-1)/n; reduce-scatter, allgather, all-to-all(v) (n-1)/n; broadcast and sendrecv 1.
double busbwFactor(Collective c, int ranks);

// Per-pair element counts for all-to-allv: matrix[src * ranks + dst].
struct AlltoallvPlan {
  int ranks = 0;
  std::vector<uint64_t> matrix;
  uint64_t at(int src, int dst) const { return matrix[static_cast<size_t>(src) * ranks + dst]; }
  uint64_t sendTotal(int r) const;
  uint64_t recvTotal(int r) const;
  uint64_t sendOffset(int r, int dst) const;  // where the block for dst starts in r's input
  uint64_t recvOffset(int r, int src) const;  // where the block from src starts in r's output
  uint64_t maxVolume() const;                 // largest per-rank send or receive total
};

struct Geometry {
  uint64_t in_elems = 0;
  uint64_t out_elems = 0;
  // In place, input and output both live in the receive buffer at these element offsets.
  uint64_t in_place_in_offset = 0;
  uint64_t in_place_out_offset = 0;
  bool in_place_supported = true;
};

// `count` is already rounded (see roundCount); `plan` only for all-to-allv.
Geometry geometry(Collective c, uint64_t count, int ranks, int rank, const AlltoallvPlan* plan);
// nccl-tests rounds counts of the block-structured collectives down to a multiple of ranks.
uint64_t roundCount(Collective c, uint64_t count, int ranks);

}  // namespace ccscope::collectives
