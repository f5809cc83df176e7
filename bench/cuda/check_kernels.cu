#include <cuda_runtime.h>

#include "bench/check_values.h"
#include "bench/cuda/check_kernels.h"
#include "collectives/cuda/launch_grid.h"
#include "core/cuda_status.h"
#include "core/dtype_dispatch.h"

namespace ccscope::bench {

using core::Status;

namespace {

constexpr unsigned kWarp = 32;

__device__ inline uint64_t firstIndex() {
  return blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
}
__device__ inline uint64_t gridStride() { return static_cast<uint64_t>(gridDim.x) * blockDim.x; }

template <typename T>
__global__ void fillKernel(ValueContext v, T* in, uint64_t n) {
  for (uint64_t e = firstIndex(); e < n; e += gridStride()) in[e] = values::inputAt<T>(v, e);
}

template <typename T>
__global__ void poisonKernel(T* buf, uint64_t n) {
  const T p = values::small<T>(values::kPoison);
  for (uint64_t e = firstIndex(); e < n; e += gridStride()) buf[e] = p;
}

// Each block sums its threads' counts (warp shuffles, then one warp over the warp sums) and
// adds once to the global counter.
template <typename T>
__global__ void countWrongKernel(ValueContext v, const T* out, uint64_t n,
                                 unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (uint64_t e = firstIndex(); e < n; e += gridStride())
    mine += !values::sameBits(values::expectedAt<T>(v, e), out[e]);
  for (unsigned off = kWarp / 2; off > 0; off /= 2) mine += __shfl_down_sync(~0u, mine, off);
  __shared__ unsigned long long warps[collectives::device::kThreadsPerBlock / kWarp];
  const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  if (lane == 0) warps[warp] = mine;
  __syncthreads();
  if (warp != 0) return;
  mine = lane < blockDim.x / kWarp ? warps[lane] : 0;
  for (unsigned off = kWarp / 2; off > 0; off /= 2) mine += __shfl_down_sync(~0u, mine, off);
  if (lane == 0 && mine != 0) atomicAdd(wrong, mine);
}

ValueContext valuesOf(const DeviceCheckContext& c) {
  return {.collective = c.collective,
          .op = c.op,
          .rank = c.rank,
          .ranks = c.ranks,
          .count = c.count,
          .root = c.root,
          .send_offsets = c.send_offsets,
          .recv_offsets = c.recv_offsets};
}

Status checkOffsets(const DeviceCheckContext& c) {
  if (c.collective == collectives::Collective::kAlltoallv && (!c.send_offsets || !c.recv_offsets) &&
      (c.in_elems || c.out_elems))
    return Status(core::Code::kInvalidArgument,
                  "alltoallv check on the device needs the device copies of its offsets")
        .withLayer(core::Layer::kGpu);
  return Status::ok();
}

// Zeroes the counter and counts into it.
Status launchCount(const DeviceCheckContext& c, const void* out, unsigned long long* wrong,
                   cudaStream_t s) {
  CCSCOPE_ASSIGN_OR_RETURN(auto grid, collectives::device::launchGrid(c.out_elems));
  CCSCOPE_CUDA_RETURN("cudaMemsetAsync(wrong count)", cudaMemsetAsync(wrong, 0, sizeof(*wrong), s));
  core::dispatchDataType(c.dtype, [&]<typename T>() {
    countWrongKernel<T><<<grid.blocks, grid.threads, 0, s>>>(
        valuesOf(c), static_cast<const T*>(out), c.out_elems, wrong);
  });
  CCSCOPE_CUDA_RETURN("countWrongKernel<<<>>>", cudaGetLastError());
  return Status::ok();
}

// Copies the counter back and releases it, whatever happened before; the first error wins.
core::Result<int64_t> finishCount(unsigned long long* wrong, Status launched, cudaStream_t s) {
  unsigned long long host = 0;
  Status copied =
      launched.isOk()
          ? core::cudaStatus("cudaMemcpyAsync(wrong count)",
                             cudaMemcpyAsync(&host, wrong, sizeof(host), cudaMemcpyDeviceToHost, s))
          : std::move(launched);
  Status freed = core::cudaStatus("cudaFreeAsync(wrong count)", cudaFreeAsync(wrong, s));
  Status synced = core::cudaStatus("cudaStreamSynchronize", cudaStreamSynchronize(s));
  for (Status* st : {&copied, &freed, &synced})
    if (!st->isOk()) return std::move(*st);
  return static_cast<int64_t>(host);
}

}  // namespace

DeviceCheckContext deviceCheckContext(const CheckContext& c, const uint64_t* device_send_offsets,
                                      const uint64_t* device_recv_offsets) {
  auto g = collectives::geometry(c.collective, c.count, c.ranks, c.rank, c.plan);
  return {.collective = c.collective,
          .dtype = c.dtype,
          .op = c.op,
          .rank = c.rank,
          .ranks = c.ranks,
          .count = c.count,
          .root = c.root,
          .send_offsets = device_send_offsets,
          .recv_offsets = device_recv_offsets,
          .in_elems = g.in_elems,
          .out_elems = g.out_elems};
}

Status fillInputOnDevice(const DeviceCheckContext& c, void* in, void* stream) {
  CCSCOPE_RETURN_IF_ERROR(checkOffsets(c));
  if (c.in_elems == 0) return Status::ok();
  CCSCOPE_ASSIGN_OR_RETURN(auto grid, collectives::device::launchGrid(c.in_elems));
  auto s = static_cast<cudaStream_t>(stream);
  core::dispatchDataType(c.dtype, [&]<typename T>() {
    fillKernel<T>
        <<<grid.blocks, grid.threads, 0, s>>>(valuesOf(c), static_cast<T*>(in), c.in_elems);
  });
  CCSCOPE_CUDA_RETURN("fillKernel<<<>>>", cudaGetLastError());
  return Status::ok();
}

Status poisonOnDevice(const DeviceCheckContext& c, void* buf, uint64_t elems, void* stream) {
  if (elems == 0) return Status::ok();
  CCSCOPE_ASSIGN_OR_RETURN(auto grid, collectives::device::launchGrid(elems));
  auto s = static_cast<cudaStream_t>(stream);
  core::dispatchDataType(c.dtype, [&]<typename T>() {
    poisonKernel<T><<<grid.blocks, grid.threads, 0, s>>>(static_cast<T*>(buf), elems);
  });
  CCSCOPE_CUDA_RETURN("poisonKernel<<<>>>", cudaGetLastError());
  return Status::ok();
}

core::Result<int64_t> countWrongOnDevice(const DeviceCheckContext& c, const void* out,
                                         void* stream) {
  CCSCOPE_RETURN_IF_ERROR(checkOffsets(c));
  if (c.out_elems == 0) return int64_t{0};
  auto s = static_cast<cudaStream_t>(stream);
  unsigned long long* wrong = nullptr;
  CCSCOPE_CUDA_RETURN("cudaMallocAsync(wrong count)",
                      cudaMallocAsync(reinterpret_cast<void**>(&wrong), sizeof(*wrong), s));
  return finishCount(wrong, launchCount(c, out, wrong, s), s);
}

}  // namespace ccscope::bench
