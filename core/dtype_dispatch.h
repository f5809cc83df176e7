// Storage type <-> arithmetic type for every DataType, and one dispatch from the runtime enum to
// a template instantiation: the single place per-type code is generated (no copied loops).
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/dtype.h"

namespace ccscope::core {

template <typename T>
struct Arith {
  using type = T;
};
template <>
struct Arith<Half> {
  using type = float;
};
template <>
struct Arith<Bfloat16> {
  using type = float;
};

template <typename T>
CCSCOPE_HD inline typename Arith<T>::type load(T v) {
  return v;
}
CCSCOPE_HD inline float load(Half v) { return toFloat(v); }
CCSCOPE_HD inline float load(Bfloat16 v) { return toFloat(v); }
template <typename T, typename A>
CCSCOPE_HD inline T store(A v) {
  return static_cast<T>(v);
}
template <>
CCSCOPE_HD inline Half store<Half, float>(float v) {
  return toHalf(v);
}
template <>
CCSCOPE_HD inline Bfloat16 store<Bfloat16, float>(float v) {
  return toBfloat16(v);
}

// Calls f.template operator()<StorageType>() for the runtime dtype.
template <typename F>
decltype(auto) dispatchDataType(DataType t, F&& f) {
  switch (t) {
    case DataType::kInt8:
      return f.template operator()<int8_t>();
    case DataType::kUint8:
      return f.template operator()<uint8_t>();
    case DataType::kInt32:
      return f.template operator()<int32_t>();
    case DataType::kUint32:
      return f.template operator()<uint32_t>();
    case DataType::kInt64:
      return f.template operator()<int64_t>();
    case DataType::kUint64:
      return f.template operator()<uint64_t>();
    case DataType::kHalf:
      return f.template operator()<Half>();
    case DataType::kBfloat16:
      return f.template operator()<Bfloat16>();
    case DataType::kFloat:
      return f.template operator()<float>();
    case DataType::kDouble:
      return f.template operator()<double>();
  }
  return f.template operator()<float>();
}

template <ReduceOp Op, typename A>
CCSCOPE_HD inline A combine(A x, A y) {
  constexpr bool kArith = Op == ReduceOp::kSum || Op == ReduceOp::kAvg || Op == ReduceOp::kProd;
  if constexpr (kArith && std::is_integral_v<A>) {
    // Integers wrap on overflow (as on a GPU, and as the checker expects); C++ defines that for
    // unsigned arithmetic only, and promotes 8- and 16-bit operands to int first.
    using U = std::make_unsigned_t<decltype(x + y)>;
    using UA = std::make_unsigned_t<A>;  // the low bits are all the result keeps
    const U a = static_cast<UA>(x), b = static_cast<UA>(y);
    return static_cast<A>(Op == ReduceOp::kProd ? a * b : a + b);
  } else if constexpr (Op == ReduceOp::kSum || Op == ReduceOp::kAvg)
    return static_cast<A>(x + y);
  else if constexpr (Op == ReduceOp::kProd)
    return static_cast<A>(x * y);
  else if constexpr (Op == ReduceOp::kMin)
    return y < x ? y : x;
  else
    return x < y ? y : x;
}

}  // namespace ccscope::core
