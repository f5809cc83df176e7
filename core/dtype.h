// Element types and reduction operators shared by collectives, the harness and the reports.
// half and bfloat16 are stored as 16-bit patterns; arithmetic happens in float.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

// Marks the scalar helpers callable from CUDA kernels as well as host code, so the device
// reductions and checks use the very same conversions (empty for the host compiler).
#if defined(__CUDACC__)
#define CCSCOPE_HD __host__ __device__
#else
#define CCSCOPE_HD
#endif

namespace ccscope::core {

enum class DataType {
  kInt8,
  kUint8,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kHalf,
  kBfloat16,
  kFloat,
  kDouble
};
enum class ReduceOp { kSum, kProd, kMin, kMax, kAvg };

inline constexpr DataType kAllDataTypes[] = {
    DataType::kInt8,   DataType::kUint8, DataType::kInt32,    DataType::kUint32, DataType::kInt64,
    DataType::kUint64, DataType::kHalf,  DataType::kBfloat16, DataType::kFloat,  DataType::kDouble};
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin,
                                             ReduceOp::kMax, ReduceOp::kAvg};

size_t dataTypeSize(DataType t);
const char* dataTypeName(DataType t);  // nccl-tests spelling: int8, uint8, ..., half, bfloat16
const char* reduceOpName(ReduceOp op);
Result<DataType> parseDataType(std::string_view s);
Result<ReduceOp> parseReduceOp(std::string_view s);
// "float,half" or "all".
Result<std::vector<DataType>> parseDataTypeList(std::string_view s);
Result<std::vector<ReduceOp>> parseReduceOpList(std::string_view s);

struct Half {
  uint16_t bits;
};
struct Bfloat16 {
  uint16_t bits;
};

CCSCOPE_HD inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
CCSCOPE_HD inline uint32_t floatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

CCSCOPE_HD inline float toFloat(Bfloat16 b) {
  return bitsToFloat(static_cast<uint32_t>(b.bits) << 16);
}
CCSCOPE_HD inline Bfloat16 toBfloat16(float f) {
  uint32_t u = floatToBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<uint16_t>((u >> 16) | 0x40)};  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return {static_cast<uint16_t>(u >> 16)};
}

// IEEE binary16 <-> binary32, round to nearest even; branch-light so loops vectorise.
CCSCOPE_HD inline float toFloat(Half h) {
  uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  uint32_t em = h.bits & 0x7fffu;
  if (em >= 0x7c00u) return bitsToFloat(sign | 0x7f800000u | ((em & 0x3ffu) << 13));
  if (em < 0x0400u) {  // zero or subnormal: exact via float arithmetic
    float v = static_cast<float>(em) * 5.9604644775390625e-08f;  // 2^-24
    return sign ? -v : v;
  }
  return bitsToFloat(sign | ((em + ((127 - 15) << 10)) << 13));
}
CCSCOPE_HD inline Half toHalf(float f) {
  uint32_t u = floatToBits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return {static_cast<uint16_t>(sign | 0x7e00u)};   // NaN
  if (a >= 0x477ff000u) return {static_cast<uint16_t>(sign | 0x7c00u)};  // overflow -> inf
  if (a < 0x38800000u) {              // result is subnormal or zero: let float rounding do the work
    float v = bitsToFloat(a) + 0.5f;  // 0.5 = 2^-1; ulp there is 2^-24 = half's subnormal step
    return {static_cast<uint16_t>(sign | (floatToBits(v) - 0x3f000000u))};
  }
  uint32_t mant_odd = (a >> 13) & 1u;
  a += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return {static_cast<uint16_t>(sign | (a >> 13))};
}

}  // namespace ccscope::core
