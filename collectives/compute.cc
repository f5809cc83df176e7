#include "collectives/compute.h"

#include <cstring>

namespace ccscope::collectives {

core::Status CpuCompute::bind(core::DataType dtype, core::ReduceOp op, int ranks) {
  elem_ = core::dataTypeSize(dtype);
  ranks_ = ranks;
  reduce_ = reduceKernel(dtype, reduceOpForKernel(op));
  scale_ = scaleKernel(dtype);
  return core::Status::ok();
}

core::Result<bool> CpuCompute::start(const LocalStep& s, uint32_t /*token*/) {
  switch (s.kind) {
    case OpKind::kReduce:
      reduce_(s.dst, s.a, s.b, s.count);
      break;
    case OpKind::kCopy:
      if (s.a != s.dst && s.count) std::memmove(s.dst, s.a, s.count * elem_);
      break;
    case OpKind::kScale:
      scale_(s.dst, s.count, ranks_);
      break;
    default:
      return core::Status(core::Code::kInternal, "a message given to the compute backend");
  }
  return true;
}

}  // namespace ccscope::collectives
