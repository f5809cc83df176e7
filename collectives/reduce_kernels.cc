#include "collectives/reduce_kernels.h"

#include "core/dtype_dispatch.h"

namespace ccscope::collectives {

using core::DataType;
using core::ReduceOp;

namespace {

template <typename T, ReduceOp Op>
void reduceLoop(void* dst, const void* a, const void* b, size_t n) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i)
    d[i] = core::store<T>(core::combine<Op>(core::load(x[i]), core::load(y[i])));
}

template <typename T>
void scaleLoop(void* dst, size_t n, int divisor) {
  T* d = static_cast<T*>(dst);
  using A = typename core::Arith<T>::type;
  const A div = static_cast<A>(divisor);
  for (size_t i = 0; i < n; ++i) d[i] = core::store<T>(static_cast<A>(core::load(d[i]) / div));
}

template <typename T>
ReduceFn forOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return reduceLoop<T, ReduceOp::kSum>;
    case ReduceOp::kProd:
      return reduceLoop<T, ReduceOp::kProd>;
    case ReduceOp::kMin:
      return reduceLoop<T, ReduceOp::kMin>;
    case ReduceOp::kMax:
      return reduceLoop<T, ReduceOp::kMax>;
  }
  return nullptr;
}

}  // namespace

ReduceFn reduceKernel(DataType t, ReduceOp op) {
  return core::dispatchDataType(t, [op]<typename T>() { return forOp<T>(op); });
}

ScaleFn scaleKernel(DataType t) {
  return core::dispatchDataType(t, []<typename T>() -> ScaleFn { return scaleLoop<T>; });
}

}  // namespace ccscope::collectives
