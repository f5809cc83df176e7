// CPU reduction kernels, one table-driven dispatch over (dtype, op): dst[i] = a[i] op b[i].
// Plain loops over restrict-free spans the compiler vectorises (-O3); half and bfloat16 are
// widened to float, combined, and rounded back to nearest even.
#pragma once

#include <cstddef>

#include "core/dtype.h"

namespace ccscope::collectives {

using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t n);
// dst[i] /= divisor (the final step of avg).
using ScaleFn = void (*)(void* dst, size_t n, int divisor);

ReduceFn reduceKernel(core::DataType t, core::ReduceOp op);
ScaleFn scaleKernel(core::DataType t);

// avg reduces with sum, then scales once.
inline core::ReduceOp reduceOpForKernel(core::ReduceOp op) {
  return op == core::ReduceOp::kAvg ? core::ReduceOp::kSum : op;
}

}  // namespace ccscope::collectives
