#include "bench/check_data.h"

#include <algorithm>

#include "core/dtype_dispatch.h"

namespace ccscope::bench {

using collectives::Collective;
using core::DataType;
using core::ReduceOp;

namespace {

// The values' view of a context, with this rank's all-to-allv offsets held by `offsets`.
ValueContext valueContext(const CheckContext& c, const AlltoallvOffsets& offsets) {
  return {.collective = c.collective,
          .op = c.op,
          .rank = c.rank,
          .ranks = c.ranks,
          .count = c.count,
          .root = c.root,
          .send_offsets = offsets.send.empty() ? nullptr : offsets.send.data(),
          .recv_offsets = offsets.recv.empty() ? nullptr : offsets.recv.data()};
}

AlltoallvOffsets offsetsFor(const CheckContext& c) {
  if (c.collective != Collective::kAlltoallv || !c.plan) return {};
  return alltoallvOffsets(*c.plan, c.rank);
}

}  // namespace

AlltoallvOffsets alltoallvOffsets(const collectives::AlltoallvPlan& plan, int rank) {
  AlltoallvOffsets o;
  o.send.assign(static_cast<size_t>(plan.ranks) + 1, 0);
  o.recv.assign(static_cast<size_t>(plan.ranks) + 1, 0);
  for (int p = 0; p < plan.ranks; ++p) {
    o.send[p + 1] = o.send[p] + plan.at(rank, p);
    o.recv[p + 1] = o.recv[p] + plan.at(p, rank);
  }
  return o;
}

void fillInput(const CheckContext& c, void* in) {
  auto g = collectives::geometry(c.collective, c.count, c.ranks, c.rank, c.plan);
  const AlltoallvOffsets offsets = offsetsFor(c);
  const ValueContext v = valueContext(c, offsets);
  core::dispatchDataType(c.dtype, [&]<typename T>() {
    T* b = static_cast<T*>(in);
    for (uint64_t e = 0; e < g.in_elems; ++e) b[e] = values::inputAt<T>(v, e);
  });
}

void poison(const CheckContext& c, void* buf, uint64_t elems) {
  core::dispatchDataType(c.dtype, [&]<typename T>() {
    std::fill_n(static_cast<T*>(buf), elems, values::small<T>(values::kPoison));
  });
}

int64_t countWrong(const CheckContext& c, const void* out) {
  auto g = collectives::geometry(c.collective, c.count, c.ranks, c.rank, c.plan);
  const AlltoallvOffsets offsets = offsetsFor(c);
  const ValueContext v = valueContext(c, offsets);
  return core::dispatchDataType(c.dtype, [&]<typename T>() {
    const T* o = static_cast<const T*>(out);
    int64_t wrong = 0;
    for (uint64_t e = 0; e < g.out_elems; ++e)
      wrong += !values::sameBits(values::expectedAt<T>(v, e), o[e]);
    return wrong;
  });
}

void fillAllreduceInput(DataType t, ReduceOp op, int rank, int ranks, uint64_t count, void* buf) {
  fillInput({Collective::kAllreduce, t, op, rank, ranks, count, 0, nullptr}, buf);
}

int64_t countAllreduceWrong(DataType t, ReduceOp op, int ranks, uint64_t count, const void* out) {
  // Every rank's allreduce output is the same: rank 0's context checks any of them.
  return countWrong({Collective::kAllreduce, t, op, 0, ranks, count, 0, nullptr}, out);
}

}  // namespace ccscope::bench
