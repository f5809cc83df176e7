#include "bench/check_data.h"

#include <algorithm>
#include <cstring>

#include "core/dtype_dispatch.h"

namespace ccscope::bench {

using collectives::Collective;
using core::DataType;
using core::ReduceOp;

namespace {

// Largest integer n such that every integer in [0, n] is exact in the type.
template <typename T>
constexpr uint64_t exactIntegers() {
  return UINT64_MAX;
}
template <>
constexpr uint64_t exactIntegers<core::Half>() {
  return 2048;
}
template <>
constexpr uint64_t exactIntegers<core::Bfloat16>() {
  return 256;
}

constexpr uint64_t kPoison = 119;  // never produced: movement values stay below 113

// Reduction inputs: small enough that sums and products stay exact for `ranks` ranks.
template <typename T>
uint64_t reduceInput(ReduceOp op, int rank, int ranks, uint64_t i) {
  switch (op) {
    case ReduceOp::kProd:
      return static_cast<uint64_t>(rank) == i % ranks ? 2 : 1;  // the product is exactly 2
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return (static_cast<uint64_t>(rank) * 7 + i * 13) % 31;
    default: {
      uint64_t cap = std::min<uint64_t>(7, exactIntegers<T>() / ranks);
      if constexpr (std::is_integral_v<T>) cap = std::min<uint64_t>(cap, 127 / ranks);
      return (static_cast<uint64_t>(rank) * 3 + i) % (std::max<uint64_t>(cap, 1) + 1);
    }
  }
}

// Data-movement values: depend on where the element came from (rank, block, index).
uint64_t moveValue(int src, int block, uint64_t i) {
  return (static_cast<uint64_t>(src) * 37 + static_cast<uint64_t>(block) * 11 + i * 3 + 1) % 113;
}

template <typename T, ReduceOp Op>
T reduced(int ranks, uint64_t i) {
  using A = typename core::Arith<T>::type;
  T acc = core::store<T>(static_cast<A>(reduceInput<T>(Op, 0, ranks, i)));
  for (int r = 1; r < ranks; ++r)
    acc = core::store<T>(
        core::combine<Op>(core::load(acc), static_cast<A>(reduceInput<T>(Op, r, ranks, i))));
  if constexpr (Op == ReduceOp::kAvg)
    acc = core::store<T>(static_cast<A>(core::load(acc) / static_cast<A>(ranks)));
  return acc;
}

template <typename T>
T reducedFor(ReduceOp op, int ranks, uint64_t i) {
  switch (op) {
    case ReduceOp::kSum:
      return reduced<T, ReduceOp::kSum>(ranks, i);
    case ReduceOp::kProd:
      return reduced<T, ReduceOp::kProd>(ranks, i);
    case ReduceOp::kMin:
      return reduced<T, ReduceOp::kMin>(ranks, i);
    case ReduceOp::kMax:
      return reduced<T, ReduceOp::kMax>(ranks, i);
    case ReduceOp::kAvg:
      return reduced<T, ReduceOp::kAvg>(ranks, i);
  }
  return T{};
}

template <typename T>
T small(uint64_t v) {
  return core::store<T>(static_cast<typename core::Arith<T>::type>(v));
}

// (block, index within block) of element e for a collective with equal blocks of `block`.
struct BlockPos {
  int block;
  uint64_t i;
};
BlockPos split(uint64_t e, uint64_t block) {
  return block ? BlockPos{static_cast<int>(e / block), e % block} : BlockPos{0, e};
}

// The value of input element e of this rank.
template <typename T>
T inputAt(const CheckContext& c, uint64_t e) {
  const uint64_t block = c.count / std::max(1, c.ranks);
  switch (c.collective) {
    case Collective::kAllreduce:
    case Collective::kReduceScatter:
      return small<T>(reduceInput<T>(c.op, c.rank, c.ranks, e));
    case Collective::kAllgather:
      return small<T>(moveValue(c.rank, c.rank, e));
    case Collective::kAlltoall: {
      auto p = split(e, block);
      return small<T>(moveValue(c.rank, p.block, p.i));
    }
    case Collective::kAlltoallv: {
      int d = 0;
      while (d + 1 < c.ranks && c.plan->sendOffset(c.rank, d + 1) <= e) ++d;
      return small<T>(moveValue(c.rank, d, e - c.plan->sendOffset(c.rank, d)));
    }
    case Collective::kBroadcast:
      return small<T>(c.rank == c.root ? moveValue(c.root, 0, e) : kPoison);
    case Collective::kSendrecv:
      return small<T>(moveValue(c.rank, 0, e));
  }
  return T{};
}

// The exact value of output element e of this rank.
template <typename T>
T expectedAt(const CheckContext& c, uint64_t e) {
  const uint64_t block = c.count / std::max(1, c.ranks);
  switch (c.collective) {
    case Collective::kAllreduce:
      return reducedFor<T>(c.op, c.ranks, e);
    case Collective::kReduceScatter:
      return reducedFor<T>(c.op, c.ranks, block * c.rank + e);
    case Collective::kAllgather: {
      auto p = split(e, block);
      return small<T>(moveValue(p.block, p.block, p.i));
    }
    case Collective::kAlltoall: {
      auto p = split(e, block);
      return small<T>(moveValue(p.block, c.rank, p.i));
    }
    case Collective::kAlltoallv: {
      int s = 0;
      while (s + 1 < c.ranks && c.plan->recvOffset(c.rank, s + 1) <= e) ++s;
      return small<T>(moveValue(s, c.rank, e - c.plan->recvOffset(c.rank, s)));
    }
    case Collective::kBroadcast:
      return small<T>(moveValue(c.root, 0, e));
    case Collective::kSendrecv:
      return small<T>(moveValue((c.rank + c.ranks - 1) % c.ranks, 0, e));
  }
  return T{};
}

}  // namespace

void fillInput(const CheckContext& c, void* in) {
  auto g = collectives::geometry(c.collective, c.count, c.ranks, c.rank, c.plan);
  core::dispatchDataType(c.dtype, [&]<typename T>() {
    T* b = static_cast<T*>(in);
    for (uint64_t e = 0; e < g.in_elems; ++e) b[e] = inputAt<T>(c, e);
  });
}

void poison(const CheckContext& c, void* buf, uint64_t elems) {
  core::dispatchDataType(
      c.dtype, [&]<typename T>() { std::fill_n(static_cast<T*>(buf), elems, small<T>(kPoison)); });
}

int64_t countWrong(const CheckContext& c, const void* out) {
  auto g = collectives::geometry(c.collective, c.count, c.ranks, c.rank, c.plan);
  return core::dispatchDataType(c.dtype, [&]<typename T>() {
    const T* o = static_cast<const T*>(out);
    int64_t wrong = 0;
    for (uint64_t e = 0; e < g.out_elems; ++e) {
      T want = expectedAt<T>(c, e);
      // Bit for bit on purpose: a -0.0 for 0.0 or a NaN's payload is a wrong result too.
      // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
      wrong += std::memcmp(&want, &o[e], sizeof(T)) != 0;
    }
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
