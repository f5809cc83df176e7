// The exact values of check_data.h as pure functions of (context, element index), callable from
// host code and CUDA kernels alike (CCSCOPE_HD), so the GPU fills and checks buffers with the
// very values the CPU harness uses. Plain parameters only: all-to-allv passes this rank's
// offset arrays, which may live in device memory.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "collectives/collective.h"
#include "core/dtype.h"
#include "core/dtype_dispatch.h"

namespace ccscope::bench {

// What the values of one rank's buffers depend on.
struct ValueContext {
  collectives::Collective collective = collectives::Collective::kAllreduce;
  core::ReduceOp op = core::ReduceOp::kSum;
  int rank = 0;
  int ranks = 1;
  uint64_t count = 0;  // the collective's count (collective.h)
  int root = 0;
  // All-to-allv only: ranks + 1 entries each, [d] where the block for/from rank d starts and
  // [ranks] the total; null otherwise.
  const uint64_t* send_offsets = nullptr;
  const uint64_t* recv_offsets = nullptr;
};

namespace values {

// Largest integer n such that every integer in [0, n] is exact in the type.
template <typename T>
CCSCOPE_HD constexpr uint64_t exactIntegers() {
  return std::is_same_v<T, core::Half>       ? 2048
         : std::is_same_v<T, core::Bfloat16> ? 256
                                             : UINT64_MAX;
}

inline constexpr uint64_t kPoison = 119;  // never produced: movement values stay below 113

// std::min/max are host-only for nvcc (without --expt-relaxed-constexpr).
CCSCOPE_HD constexpr uint64_t minU64(uint64_t a, uint64_t b) { return b < a ? b : a; }
CCSCOPE_HD constexpr uint64_t maxU64(uint64_t a, uint64_t b) { return a < b ? b : a; }

// Reduction inputs: small enough that sums and products stay exact for `ranks` ranks.
template <typename T>
CCSCOPE_HD uint64_t reduceInput(core::ReduceOp op, int rank, int ranks, uint64_t i) {
  switch (op) {
    case core::ReduceOp::kProd:
      return static_cast<uint64_t>(rank) == i % ranks ? 2 : 1;  // the product is exactly 2
    case core::ReduceOp::kMin:
    case core::ReduceOp::kMax:
      return (static_cast<uint64_t>(rank) * 7 + i * 13) % 31;
    default: {
      uint64_t cap = minU64(7, exactIntegers<T>() / ranks);
      if constexpr (std::is_integral_v<T>) cap = minU64(cap, 127 / ranks);
      return (static_cast<uint64_t>(rank) * 3 + i) % (maxU64(cap, 1) + 1);
    }
  }
}

// Data-movement values: depend on where the element came from (rank, block, index).
CCSCOPE_HD inline uint64_t moveValue(int src, int block, uint64_t i) {
  return (static_cast<uint64_t>(src) * 37 + static_cast<uint64_t>(block) * 11 + i * 3 + 1) % 113;
}

// Combined in rank order and rounded after every step, as a reduction through T would be.
template <typename T, core::ReduceOp Op>
CCSCOPE_HD T reduced(int ranks, uint64_t i) {
  using A = typename core::Arith<T>::type;
  T acc = core::store<T>(static_cast<A>(reduceInput<T>(Op, 0, ranks, i)));
  for (int r = 1; r < ranks; ++r)
    acc = core::store<T>(
        core::combine<Op>(core::load(acc), static_cast<A>(reduceInput<T>(Op, r, ranks, i))));
  if constexpr (Op == core::ReduceOp::kAvg)
    acc = core::store<T>(static_cast<A>(core::load(acc) / static_cast<A>(ranks)));
  return acc;
}

template <typename T>
CCSCOPE_HD T reducedFor(core::ReduceOp op, int ranks, uint64_t i) {
  using core::ReduceOp;
  if (op == ReduceOp::kProd) return reduced<T, ReduceOp::kProd>(ranks, i);
  if (op == ReduceOp::kMin) return reduced<T, ReduceOp::kMin>(ranks, i);
  if (op == ReduceOp::kMax) return reduced<T, ReduceOp::kMax>(ranks, i);
  if (op == ReduceOp::kAvg) return reduced<T, ReduceOp::kAvg>(ranks, i);
  return reduced<T, ReduceOp::kSum>(ranks, i);
}

template <typename T>
CCSCOPE_HD T small(uint64_t v) {
  return core::store<T>(static_cast<typename core::Arith<T>::type>(v));
}

// (block, index within block) of element e for a collective with equal blocks of `block`.
struct BlockPos {
  int block;
  uint64_t i;
};
CCSCOPE_HD inline BlockPos split(uint64_t e, uint64_t block) {
  return block ? BlockPos{static_cast<int>(e / block), e % block} : BlockPos{0, e};
}

// The block of element e under offsets[0..ranks]: the last d < ranks with offsets[d] <= e, so an
// empty block never owns an element. Binary search: a device thread per element and many ranks.
CCSCOPE_HD inline BlockPos splitAt(const uint64_t* offsets, int ranks, uint64_t e) {
  int lo = 0, hi = ranks - 1;
  while (lo < hi) {
    int mid = lo + (hi - lo + 1) / 2;
    if (offsets[mid] <= e)
      lo = mid;
    else
      hi = mid - 1;
  }
  return {lo, e - offsets[lo]};
}

CCSCOPE_HD inline uint64_t blockOf(const ValueContext& c) {
  return c.count / static_cast<uint64_t>(c.ranks > 1 ? c.ranks : 1);
}

// The value of input element e of this rank.
template <typename T>
CCSCOPE_HD T inputAt(const ValueContext& c, uint64_t e) {
  using collectives::Collective;
  switch (c.collective) {
    case Collective::kAllreduce:
    case Collective::kReduceScatter:
      return small<T>(reduceInput<T>(c.op, c.rank, c.ranks, e));
    case Collective::kAllgather:
      return small<T>(moveValue(c.rank, c.rank, e));
    case Collective::kAlltoall: {
      auto p = split(e, blockOf(c));
      return small<T>(moveValue(c.rank, p.block, p.i));
    }
    case Collective::kAlltoallv: {
      auto p = splitAt(c.send_offsets, c.ranks, e);
      return small<T>(moveValue(c.rank, p.block, p.i));
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
CCSCOPE_HD T expectedAt(const ValueContext& c, uint64_t e) {
  using collectives::Collective;
  switch (c.collective) {
    case Collective::kAllreduce:
      return reducedFor<T>(c.op, c.ranks, e);
    case Collective::kReduceScatter:
      return reducedFor<T>(c.op, c.ranks, blockOf(c) * c.rank + e);
    case Collective::kAllgather: {
      auto p = split(e, blockOf(c));
      return small<T>(moveValue(p.block, p.block, p.i));
    }
    case Collective::kAlltoall: {
      auto p = split(e, blockOf(c));
      return small<T>(moveValue(p.block, c.rank, p.i));
    }
    case Collective::kAlltoallv: {
      auto p = splitAt(c.recv_offsets, c.ranks, e);
      return small<T>(moveValue(p.block, c.rank, p.i));
    }
    case Collective::kBroadcast:
      return small<T>(moveValue(c.root, 0, e));
    case Collective::kSendrecv:
      return small<T>(moveValue((c.rank + c.ranks - 1) % c.ranks, 0, e));
  }
  return T{};
}

// The storage bits of a value as an unsigned integer of its size. Bit for bit on purpose: a -0.0
// for 0.0 or a NaN's payload is a wrong result too.
template <typename T>
CCSCOPE_HD auto bitsOf(const T& v) {
  using U = std::conditional_t<
      sizeof(T) == 1, uint8_t,
      std::conditional_t<sizeof(T) == 2, uint16_t,
                         std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  static_assert(sizeof(U) == sizeof(T));
  U u;
  std::memcpy(&u, &v, sizeof(T));
  return u;
}

template <typename T>
CCSCOPE_HD bool sameBits(const T& a, const T& b) {
  return bitsOf(a) == bitsOf(b);
}

}  // namespace values
}  // namespace ccscope::bench
