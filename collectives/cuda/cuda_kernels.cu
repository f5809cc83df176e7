#include <cuda_runtime.h>

#include <cstring>

#include "collectives/cuda/cuda_kernels.h"
#include "collectives/cuda/launch_grid.h"
#include "collectives/reduce_kernels.h"
#include "core/cuda_status.h"
#include "core/dtype_dispatch.h"

namespace ccscope::collectives {

using core::DataType;
using core::ReduceOp;
using core::Status;

namespace {

constexpr uint64_t kVectorBytes = sizeof(uint4);

// Elements [0, head) and [tail, n) go one at a time; [head, tail) as 16-byte vectors.
struct Split {
  uint64_t head = 0;
  uint64_t vectors = 0;
  uint64_t tail = 0;
};

template <typename T>
constexpr uint64_t kLanes = kVectorBytes / sizeof(T);

template <typename T, ReduceOp Op>
__device__ T reduceOne(T x, T y) {
  return core::store<T>(core::combine<Op>(core::load(x), core::load(y)));
}

template <typename T>
__device__ T scaleOne(T x, typename core::Arith<T>::type div) {
  using A = typename core::Arith<T>::type;
  return core::store<T>(static_cast<A>(core::load(x) / div));
}

// Scalar index i of the head-and-tail range to its element.
__device__ inline uint64_t edgeElement(const Split& s, uint64_t i) {
  return i < s.head ? i : s.tail + (i - s.head);
}

template <typename T, ReduceOp Op>
__global__ void reduceKernel(T* dst, const T* a, const T* b, uint64_t n, Split s) {
  constexpr uint64_t V = kLanes<T>;
  const uint64_t first = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint4* va = reinterpret_cast<const uint4*>(a + s.head);
  const uint4* vb = reinterpret_cast<const uint4*>(b + s.head);
  uint4* vd = reinterpret_cast<uint4*>(dst + s.head);
  for (uint64_t v = first; v < s.vectors; v += stride) {
    const uint4 x4 = va[v], y4 = vb[v];
    T x[V], y[V];
    std::memcpy(x, &x4, kVectorBytes);
    std::memcpy(y, &y4, kVectorBytes);
#pragma unroll
    for (uint64_t k = 0; k < V; ++k) x[k] = reduceOne<T, Op>(x[k], y[k]);
    uint4 r;
    std::memcpy(&r, x, kVectorBytes);
    vd[v] = r;
  }
  const uint64_t edges = s.head + (n - s.tail);
  for (uint64_t i = first; i < edges; i += stride) {
    const uint64_t e = edgeElement(s, i);
    dst[e] = reduceOne<T, Op>(a[e], b[e]);
  }
}

template <typename T>
__global__ void scaleKernel(T* dst, uint64_t n, Split s, int divisor) {
  using A = typename core::Arith<T>::type;
  constexpr uint64_t V = kLanes<T>;
  const A div = static_cast<A>(divisor);
  const uint64_t first = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  uint4* vd = reinterpret_cast<uint4*>(dst + s.head);
  for (uint64_t v = first; v < s.vectors; v += stride) {
    const uint4 x4 = vd[v];
    T x[V];
    std::memcpy(x, &x4, kVectorBytes);
#pragma unroll
    for (uint64_t k = 0; k < V; ++k) x[k] = scaleOne(x[k], div);
    uint4 r;
    std::memcpy(&r, x, kVectorBytes);
    vd[v] = r;
  }
  const uint64_t edges = s.head + (n - s.tail);
  for (uint64_t i = first; i < edges; i += stride) {
    const uint64_t e = edgeElement(s, i);
    dst[e] = scaleOne(dst[e], div);
  }
}

// Vectorises when every pointer sits at the same offset within 16 bytes (a scalar head brings
// them to a boundary together); otherwise every element goes scalar.
template <typename T>
Split splitFor(uint64_t n, std::initializer_list<const void*> ptrs) {
  const uintptr_t mis = reinterpret_cast<uintptr_t>(*ptrs.begin()) % kVectorBytes;
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % kVectorBytes != mis) return {n, 0, n};
  uint64_t head = ((kVectorBytes - mis) % kVectorBytes) / sizeof(T);
  if (head > n) head = n;
  const uint64_t vectors = (n - head) / kLanes<T>;
  return {head, vectors, head + vectors * kLanes<T>};
}

template <typename T>
Status checkAligned(const char* call, std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % alignof(T) != 0)
      return Status(core::Code::kInvalidArgument,
                    std::string(call) + ": a buffer is not aligned to its element size")
          .withLayer(core::Layer::kGpu);
  return Status::ok();
}

template <typename T, ReduceOp Op>
Status launchReduce(void* dst, const void* a, const void* b, uint64_t n, cudaStream_t stream) {
  CCSCOPE_RETURN_IF_ERROR(checkAligned<T>("reduceOnDevice", {dst, a, b}));
  const Split s = splitFor<T>(n, {dst, a, b});
  CCSCOPE_ASSIGN_OR_RETURN(auto grid, device::launchGrid(s.vectors + s.head + (n - s.tail)));
  reduceKernel<T, Op><<<grid.blocks, grid.threads, 0, stream>>>(
      static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), n, s);
  CCSCOPE_CUDA_RETURN("reduceKernel<<<>>>", cudaGetLastError());
  return Status::ok();
}

template <typename T>
Status launchReduceFor(ReduceOp op, void* dst, const void* a, const void* b, uint64_t n,
                       cudaStream_t stream) {
  switch (reduceOpForKernel(op)) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return launchReduce<T, ReduceOp::kSum>(dst, a, b, n, stream);
    case ReduceOp::kProd:
      return launchReduce<T, ReduceOp::kProd>(dst, a, b, n, stream);
    case ReduceOp::kMin:
      return launchReduce<T, ReduceOp::kMin>(dst, a, b, n, stream);
    case ReduceOp::kMax:
      return launchReduce<T, ReduceOp::kMax>(dst, a, b, n, stream);
  }
  return Status(core::Code::kInvalidArgument, "reduceOnDevice: unknown reduce op");
}

}  // namespace

Status reduceOnDevice(DataType t, ReduceOp op, void* dst, const void* a, const void* b, uint64_t n,
                      void* stream) {
  if (n == 0) return Status::ok();
  auto s = static_cast<cudaStream_t>(stream);
  return core::dispatchDataType(
      t, [&]<typename T>() { return launchReduceFor<T>(op, dst, a, b, n, s); });
}

Status scaleOnDevice(DataType t, void* dst, uint64_t n, int divisor, void* stream) {
  if (n == 0) return Status::ok();
  if (divisor == 0)
    return Status(core::Code::kInvalidArgument, "scaleOnDevice: divisor 0")
        .withLayer(core::Layer::kGpu);
  auto s = static_cast<cudaStream_t>(stream);
  return core::dispatchDataType(t, [&]<typename T>() -> Status {
    CCSCOPE_RETURN_IF_ERROR(checkAligned<T>("scaleOnDevice", {dst}));
    const Split split = splitFor<T>(n, {dst});
    CCSCOPE_ASSIGN_OR_RETURN(auto grid,
                             device::launchGrid(split.vectors + split.head + (n - split.tail)));
    scaleKernel<T><<<grid.blocks, grid.threads, 0, s>>>(static_cast<T*>(dst), n, split, divisor);
    CCSCOPE_CUDA_RETURN("scaleKernel<<<>>>", cudaGetLastError());
    return Status::ok();
  });
}

}  // namespace ccscope::collectives
