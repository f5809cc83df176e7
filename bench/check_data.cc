#include "bench/check_data.h"

#include <algorithm>
#include <cstring>

#include "core/dtype_dispatch.h"

namespace ccscope::bench {

using core::DataType;
using core::ReduceOp;

namespace {

// Largest integer n such that every integer in [0, n] is exact in the type.
template <typename T> constexpr uint64_t exactIntegers() { return UINT64_MAX; }
template <> constexpr uint64_t exactIntegers<core::Half>() { return 2048; }
template <> constexpr uint64_t exactIntegers<core::Bfloat16>() { return 256; }

// The input value as an integer; its size keeps sums and products exact for `ranks` ranks.
template <typename T>
uint64_t inputValue(ReduceOp op, int rank, int ranks, uint64_t i) {
  switch (op) {
    case ReduceOp::kProd:
      return static_cast<uint64_t>(rank) == i % ranks ? 2 : 1;  // product is exactly 2
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

template <typename T, ReduceOp Op>
T expectedValue(int ranks, uint64_t i) {
  using A = typename core::Arith<T>::type;
  T acc = core::store<T>(static_cast<A>(inputValue<T>(Op, 0, ranks, i)));
  for (int r = 1; r < ranks; ++r)
    acc = core::store<T>(core::combine<Op>(core::load(acc),
                                           static_cast<A>(inputValue<T>(Op, r, ranks, i))));
  if constexpr (Op == ReduceOp::kAvg)
    acc = core::store<T>(static_cast<A>(core::load(acc) / static_cast<A>(ranks)));
  return acc;
}

template <typename T, ReduceOp Op>
int64_t countWrong(int ranks, uint64_t count, const void* out) {
  const T* o = static_cast<const T*>(out);
  int64_t wrong = 0;
  for (uint64_t i = 0; i < count; ++i) {
    T e = expectedValue<T, Op>(ranks, i);
    wrong += std::memcmp(&e, &o[i], sizeof(T)) != 0;
  }
  return wrong;
}

template <typename T>
int64_t countWrongFor(ReduceOp op, int ranks, uint64_t count, const void* out) {
  switch (op) {
    case ReduceOp::kSum: return countWrong<T, ReduceOp::kSum>(ranks, count, out);
    case ReduceOp::kProd: return countWrong<T, ReduceOp::kProd>(ranks, count, out);
    case ReduceOp::kMin: return countWrong<T, ReduceOp::kMin>(ranks, count, out);
    case ReduceOp::kMax: return countWrong<T, ReduceOp::kMax>(ranks, count, out);
    case ReduceOp::kAvg: return countWrong<T, ReduceOp::kAvg>(ranks, count, out);
  }
  return 0;
}

}  // namespace

void fillAllreduceInput(DataType t, ReduceOp op, int rank, int ranks, uint64_t count, void* buf) {
  core::dispatchDataType(t, [&]<typename T>() {
    using A = typename core::Arith<T>::type;
    T* b = static_cast<T*>(buf);
    for (uint64_t i = 0; i < count; ++i)
      b[i] = core::store<T>(static_cast<A>(inputValue<T>(op, rank, ranks, i)));
  });
}

int64_t countAllreduceWrong(DataType t, ReduceOp op, int ranks, uint64_t count, const void* out) {
  return core::dispatchDataType(
      t, [&]<typename T>() { return countWrongFor<T>(op, ranks, count, out); });
}

}  // namespace ccscope::bench
