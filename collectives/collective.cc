#include "collectives/collective.h"

#include <fmt/format.h>

#include <algorithm>

namespace ccscope::collectives {

namespace {
constexpr Collective kAll[] = {Collective::kAllreduce, Collective::kReduceScatter,
                               Collective::kAllgather, Collective::kAlltoall,
                               Collective::kAlltoallv, Collective::kBroadcast,
                               Collective::kSendrecv};
}

const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kAllreduce:
      return "allreduce";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kAllgather:
      return "allgather";
    case Collective::kAlltoall:
      return "alltoall";
    case Collective::kAlltoallv:
      return "alltoallv";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kSendrecv:
      return "sendrecv";
  }
  return "?";
}

std::string collectiveNames() {
  std::string out;
  for (Collective c : kAll) out += std::string(out.empty() ? "" : ", ") + collectiveName(c);
  return out;
}

core::Result<Collective> parseCollective(const std::string& s) {
  for (Collective c : kAll)
    if (s == collectiveName(c)) return c;
  if (s == "reduce_scatter" || s == "reduce-scatter") return Collective::kReduceScatter;
  if (s == "all_reduce") return Collective::kAllreduce;
  if (s == "all_gather") return Collective::kAllgather;
  if (s == "alltoallv" || s == "all_to_allv") return Collective::kAlltoallv;
  return core::Status(core::Code::kInvalidArgument,
                      fmt::format("unknown collective '{}' (available: {})", s, collectiveNames()));
}

bool isReduction(Collective c) {
  return c == Collective::kAllreduce || c == Collective::kReduceScatter;
}

double busbwFactor(Collective c, int ranks) {
  if (ranks <= 0) return 0;
  const double n = ranks;
  switch (c) {
    case Collective::kAllreduce:
      return 2 * (n - 1) / n;
    case Collective::kReduceScatter:
    case Collective::kAllgather:
    case Collective::kAlltoall:
    case Collective::kAlltoallv:
      return (n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kSendrecv:
      return 1;
  }
  return 1;
}

uint64_t AlltoallvPlan::sendTotal(int r) const {
  uint64_t t = 0;
  for (int d = 0; d < ranks; ++d) t += at(r, d);
  return t;
}

uint64_t AlltoallvPlan::recvTotal(int r) const {
  uint64_t t = 0;
  for (int s = 0; s < ranks; ++s) t += at(s, r);
  return t;
}

uint64_t AlltoallvPlan::sendOffset(int r, int dst) const {
  uint64_t t = 0;
  for (int d = 0; d < dst; ++d) t += at(r, d);
  return t;
}

uint64_t AlltoallvPlan::recvOffset(int r, int src) const {
  uint64_t t = 0;
  for (int s = 0; s < src; ++s) t += at(s, r);
  return t;
}

uint64_t AlltoallvPlan::maxVolume() const {
  uint64_t m = 0;
  for (int r = 0; r < ranks; ++r) m = std::max({m, sendTotal(r), recvTotal(r)});
  return m;
}

uint64_t roundCount(Collective c, uint64_t count, int ranks) {
  switch (c) {
    case Collective::kReduceScatter:
    case Collective::kAllgather:
    case Collective::kAlltoall:
      return count / ranks * ranks;
    default:
      return count;
  }
}

Geometry geometry(Collective c, uint64_t count, int ranks, int rank, const AlltoallvPlan* plan) {
  Geometry g;
  const uint64_t block = count / std::max(1, ranks);
  switch (c) {
    case Collective::kAllreduce:
    case Collective::kBroadcast:
    case Collective::kSendrecv:
    case Collective::kAlltoall:
      g.in_elems = g.out_elems = count;
      break;
    case Collective::kReduceScatter:
      g.in_elems = count;
      g.out_elems = block;
      g.in_place_out_offset = block * rank;
      break;
    case Collective::kAllgather:
      g.in_elems = block;
      g.out_elems = count;
      g.in_place_in_offset = block * rank;
      break;
    case Collective::kAlltoallv:
      g.in_elems = plan ? plan->sendTotal(rank) : 0;
      g.out_elems = plan ? plan->recvTotal(rank) : 0;
      g.in_place_supported = false;  // MPI_IN_PLACE all-to-allv has other semantics
      break;
  }
  // In place, a sendrecv or all-to-all would overwrite blocks peers have not read yet (NCCL does
  // not offer it either): those rows report out-of-place only.
  if (c == Collective::kSendrecv || c == Collective::kAlltoall) g.in_place_supported = false;
  return g;
}

}  // namespace ccscope::collectives
