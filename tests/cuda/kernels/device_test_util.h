// Helpers of the kernel tests: skip without a device (CUDA's own reason), RAII device memory,
// and deterministic pseudo-random test data.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace ccscope::testing {

// Empty when a device is usable; otherwise why not, in CUDA's words.
inline std::string noDeviceReason() {
  int n = 0;
  if (cudaError_t e = cudaGetDeviceCount(&n); e != cudaSuccess) return cudaGetErrorString(e);
  if (n == 0) return "cudaGetDeviceCount found 0 devices";
  return {};
}

#define CCSCOPE_SKIP_WITHOUT_DEVICE()                                         \
  do {                                                                        \
    if (std::string why = ::ccscope::testing::noDeviceReason(); !why.empty()) \
      GTEST_SKIP() << "no CUDA device: " << why;                              \
  } while (0)

#define CCSCOPE_ASSERT_OK(expr)                               \
  do {                                                        \
    ::ccscope::core::Status s_ = (expr);                      \
    ASSERT_TRUE(s_.isOk()) << #expr << ": " << s_.toString(); \
  } while (0)

#define CCSCOPE_ASSERT_CUDA(expr)                                          \
  do {                                                                     \
    cudaError_t e_ = (expr);                                               \
    ASSERT_EQ(e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(e_); \
  } while (0)

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (cudaMalloc(&p_, bytes ? bytes : 1) != cudaSuccess) p_ = nullptr;
  }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  bool ok() const { return p_ != nullptr; }
  char* get() const { return static_cast<char*>(p_); }
  cudaError_t upload(const std::vector<char>& h) const {
    return cudaMemcpy(p_, h.data(), h.size(), cudaMemcpyHostToDevice);
  }
  std::vector<char> download() const {
    std::vector<char> h(bytes_);
    if (cudaMemcpy(h.data(), p_, bytes_, cudaMemcpyDeviceToHost) != cudaSuccess) h.clear();
    return h;
  }

 private:
  size_t bytes_;
  void* p_ = nullptr;
};

// Values every op keeps finite and free of signed overflow: floats in [-4, 4) with 8 fraction
// bits (rounded to half/bfloat16 as stored), signed integers small enough that a product fits.
inline std::vector<char> randomElements(core::DataType t, uint64_t n, uint64_t seed) {
  const size_t es = core::dataTypeSize(t);
  std::vector<char> out(n * es);
  uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (uint64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t r = x >> 11;
    const float f = static_cast<float>(static_cast<int64_t>(r % 2048) - 1024) / 256.0f;
    char* p = out.data() + i * es;
    auto put = [&](auto v) { std::memcpy(p, &v, sizeof(v)); };
    switch (t) {
      case core::DataType::kInt8:
        put(static_cast<int8_t>(r));
        break;
      case core::DataType::kUint8:
        put(static_cast<uint8_t>(r));
        break;
      case core::DataType::kInt32:
        put(static_cast<int32_t>(r % 65536) - 32768);
        break;
      case core::DataType::kUint32:
        put(static_cast<uint32_t>(r));
        break;
      case core::DataType::kInt64:
        put(static_cast<int64_t>(r % (1ull << 32)) - (1ll << 31));
        break;
      case core::DataType::kUint64:
        put(r * 2654435761ull);
        break;
      case core::DataType::kHalf:
        put(core::toHalf(f));
        break;
      case core::DataType::kBfloat16:
        put(core::toBfloat16(f));
        break;
      case core::DataType::kFloat:
        put(f + static_cast<float>(r % 7) / 1024.0f);
        break;
      case core::DataType::kDouble:
        put(static_cast<double>(f) + static_cast<double>(r % 97) / 1e5);
        break;
    }
  }
  return out;
}

}  // namespace ccscope::testing
