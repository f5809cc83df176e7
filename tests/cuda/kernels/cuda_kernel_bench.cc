// Kernel bandwidth: the out-of-place sum kernel (float, bfloat16) against cudaMemcpyAsync
// device to device in the same run, so the ratio says how close the reduction gets to the copy
// engine's ceiling. Bytes count what is read plus written (sum 3N, copy 2N); each figure is the
// median of several repeats timed with CUDA events. Prints one JSON object; exit 5 without a GPU.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "collectives/cuda/cuda_kernels.h"

namespace {

using ccscope::core::DataType;

constexpr int kExitNoDevice = 5;
constexpr int kExitFailure = 1;
constexpr int kRepeats = 15;
constexpr int kWarmups = 3;

struct Failure {
  std::string what;
};

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw Failure{std::string(call) + ": " + cudaGetErrorString(e)};
}
void check(const ccscope::core::Status& s) {
  if (!s.isOk()) throw Failure{s.toString()};
}

// Median seconds of one call of `op` on `stream`, timed with events.
double medianSeconds(const std::function<void()>& op, cudaStream_t stream) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < kWarmups; ++i) op();
  std::vector<double> seconds;
  for (int i = 0; i < kRepeats; ++i) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    op();
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    seconds.push_back(ms / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

uint64_t parseBytes(int argc, char** argv) {
  uint64_t bytes = 256ull << 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--bytes") == 0 && i + 1 < argc)
      bytes = std::strtoull(argv[++i], nullptr, 10);
    else
      throw Failure{std::string("unknown argument '") + argv[i] + "' (usage: --bytes N)"};
  }
  if (bytes < 16) throw Failure{"--bytes must be at least 16"};
  return bytes / 16 * 16;  // whole elements of every dtype, whole vectors
}

int run(int argc, char** argv) {
  const uint64_t bytes = parseBytes(argc, argv);
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  void *a = nullptr, *b = nullptr, *dst = nullptr;
  check(cudaMalloc(&a, bytes), "cudaMalloc");
  check(cudaMalloc(&b, bytes), "cudaMalloc");
  check(cudaMalloc(&dst, bytes), "cudaMalloc");
  check(cudaMemset(a, 0x3c, bytes), "cudaMemset");  // finite values in every dtype
  check(cudaMemset(b, 0x3c, bytes), "cudaMemset");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");

  const double copy = medianSeconds(
      [&] { check(cudaMemcpyAsync(dst, a, bytes, cudaMemcpyDeviceToDevice, stream), "copy"); },
      stream);
  auto sum = [&](DataType t) {
    const uint64_t n = bytes / (t == DataType::kFloat ? 4 : 2);
    return medianSeconds(
        [&] {
          check(ccscope::collectives::reduceOnDevice(t, ccscope::core::ReduceOp::kSum, dst, a, b, n,
                                                     stream));
        },
        stream);
  };
  const double sum_float = sum(DataType::kFloat), sum_bf16 = sum(DataType::kBfloat16);
  cudaStreamDestroy(stream);
  cudaFree(a);
  cudaFree(b);
  cudaFree(dst);

  const double gb = static_cast<double>(bytes) / 1e9;
  const double copy_gbps = 2 * gb / copy, f_gbps = 3 * gb / sum_float, h_gbps = 3 * gb / sum_bf16;
  std::printf(
      "{\"bytes\":%llu,\"copy_gbps\":%.1f,\"sum_float_gbps\":%.1f,\"sum_bfloat16_gbps\":%.1f,"
      "\"ratio_float\":%.3f,\"ratio_bfloat16\":%.3f,\"device\":\"%s\"}\n",
      static_cast<unsigned long long>(bytes), copy_gbps, f_gbps, h_gbps, f_gbps / copy_gbps,
      h_gbps / copy_gbps, prop.name);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "cuda_kernel_bench: no CUDA device: %s\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found 0 devices");
    return kExitNoDevice;
  }
  try {
    return run(argc, argv);
  } catch (const Failure& f) {
    std::fprintf(stderr, "cuda_kernel_bench: %s\n", f.what.c_str());
    return kExitFailure;
  }
}
