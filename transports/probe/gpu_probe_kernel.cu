// The kernel-and-copy probe, run in a child process on one device: a host pattern goes to the
// GPU, a kernel transforms it, the result comes back and is checked. A GPU that cannot finish
// the kernel or the copy leaves the child hanging; the parent's deadline then names it.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "transports/probe/gpu_report.h"

namespace ccscope::transports {

namespace {

constexpr unsigned kElements = 1u << 20;  // 4 MiB: big enough to cross the copy engines' DMA
constexpr unsigned kThreads = 256;
constexpr unsigned kMultiplier = 2654435761u;  // Knuth's multiplicative hash: every bit changes

__global__ void transform(const unsigned* in, unsigned* out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * kMultiplier + i;
}

bool failed(const char* call, cudaError_t e) {
  if (e == cudaSuccess) return false;
  std::printf("%s error %s: %s (%s %d)\n", kGpuProbeLinePrefix, call, cudaGetErrorString(e),
              cudaGetErrorName(e), static_cast<int>(e));
  std::fflush(stdout);
  return true;
}

}  // namespace

int runGpuKernelProbeChild(int device) {
  auto start = std::chrono::steady_clock::now();
  std::vector<unsigned> host(kElements), back(kElements);
  for (unsigned i = 0; i < kElements; ++i) host[i] = i ^ 0x5a5a5a5au;
  unsigned *in = nullptr, *out = nullptr;
  const size_t bytes = kElements * sizeof(unsigned);
  if (failed("cudaSetDevice", cudaSetDevice(device)) ||
      failed("cudaMalloc", cudaMalloc(&in, bytes)) ||
      failed("cudaMalloc", cudaMalloc(&out, bytes)) ||
      failed("cudaMemcpy(host to device)",
             cudaMemcpy(in, host.data(), bytes, cudaMemcpyHostToDevice)))
    return 1;
  transform<<<(kElements + kThreads - 1) / kThreads, kThreads>>>(in, out, kElements);
  if (failed("kernel launch", cudaGetLastError()) ||
      failed("cudaDeviceSynchronize", cudaDeviceSynchronize()) ||
      failed("cudaMemcpy(device to host)",
             cudaMemcpy(back.data(), out, bytes, cudaMemcpyDeviceToHost)))
    return 1;
  for (unsigned i = 0; i < kElements; ++i)
    if (back[i] != host[i] * kMultiplier + i) {
      std::printf("%s error wrong data at element %u: got %#x, expected %#x\n", kGpuProbeLinePrefix,
                  i, back[i], host[i] * kMultiplier + i);
      std::fflush(stdout);
      return 1;
    }
  cudaFree(in);
  cudaFree(out);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s ok %.1f ms\n", kGpuProbeLinePrefix, ms);
  std::fflush(stdout);
  return 0;
}

}  // namespace ccscope::transports
