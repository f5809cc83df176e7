// Device reductions for a CUDA compute backend: the GPU side of collectives/reduce_kernels.h,
// element for element and bit for bit the same results (half and bfloat16 widened to float,
// combined, rounded to nearest even). Host-callable without CUDA headers: streams are void*
// (a cudaStream_t; null is the legacy default stream). Every call only enqueues.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"

namespace ccscope::collectives {

// dst[i] = a[i] op b[i] for i < n, on device memory. kAvg reduces as kSum (the caller scales once
// at the end with scaleOnDevice, as the CPU path does). dst may be a or b (in place) or a
// distinct buffer; partially overlapping buffers are not supported. Pointers must be aligned to
// the element size; 16-byte alignment shared by all three takes the vectorised path.
core::Status reduceOnDevice(core::DataType t, core::ReduceOp op, void* dst, const void* a,
                            const void* b, uint64_t n, void* stream);

// dst[i] = dst[i] / divisor (avg's final step), as the CPU ScaleFn computes it.
core::Status scaleOnDevice(core::DataType t, void* dst, uint64_t n, int divisor, void* stream);

}  // namespace ccscope::collectives
