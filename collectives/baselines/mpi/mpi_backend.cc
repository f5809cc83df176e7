#include "collectives/baselines/mpi/mpi_backend.h"

#include <mpi.h>

#include <fmt/format.h>

#include "collectives/baselines/mpi/mpi_runtime.h"
#include "collectives/schedule_backend.h"

namespace ccscope::collectives::mpi {

using core::Code;
using core::DataType;
using core::ReduceOp;
using core::Status;

namespace {

core::Result<MPI_Datatype> mpiType(DataType t) {
  switch (t) {
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kUint8: return MPI_UINT8_T;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kUint32: return MPI_UINT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kUint64: return MPI_UINT64_T;
    case DataType::kFloat: return MPI_FLOAT;
    case DataType::kDouble: return MPI_DOUBLE;
    default: break;
  }
  return Status(Code::kUnsupported,
                fmt::format("MPI has no datatype for {}", core::dataTypeName(t)));
}

core::Result<MPI_Op> mpiOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kProd: return MPI_PROD;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    default: break;
  }
  return Status(Code::kUnsupported, "MPI has no avg reduction");
}

Status check(const char* call, int rc) {
  if (rc == MPI_SUCCESS) return Status::ok();
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return Status(Code::kRemoteError, fmt::format("{} failed: {}", call, msg))
      .withLayer(core::Layer::kLibrary)
      .withNative(call, rc);
}

class MpiBackend final : public CollectiveBackend {
 public:
  std::string algorithm() const override { return "native"; }
  std::string transport() const override { return "mpi"; }
  int rank() const override { int r = 0; MPI_Comm_rank(MPI_COMM_WORLD, &r); return r; }
  int size() const override { int n = 1; MPI_Comm_size(MPI_COMM_WORLD, &n); return n; }
  Status allocate(size_t max_bytes) override {
    send_ = HostBuffer(std::max<size_t>(max_bytes, 64));
    recv_ = HostBuffer(std::max<size_t>(max_bytes, 64));
    return Status::ok();
  }
  char* sendBuffer() override { return send_.data(); }
  char* recvBuffer() override { return recv_.data(); }
  Status prepare(const OpConfig& cfg) override {
    CCSCOPE_ASSIGN_OR_RETURN(type_, mpiType(cfg.dtype));
    CCSCOPE_ASSIGN_OR_RETURN(op_, mpiOp(cfg.op));
    count_ = static_cast<int>(cfg.count);
    if (cfg.count > static_cast<uint64_t>(INT32_MAX))
      return Status(Code::kUnsupported, "MPI counts are limited to 2^31-1 elements");
    return Status::ok();
  }
  // MPI collectives take no deadline; the harness watchdog bounds them.
  Status run(bool in_place, core::Deadline) override {
    return check("MPI_Allreduce", MPI_Allreduce(in_place ? MPI_IN_PLACE : send_.data(),
                                                recv_.data(), count_, type_, op_, MPI_COMM_WORLD));
  }
  Status barrier(core::Deadline) override { return check("MPI_Barrier", MPI_Barrier(MPI_COMM_WORLD)); }
  Status maxDoubles(std::span<double> v, core::Deadline) override {
    return check("MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()),
                                                MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  }
  Status sumInts(std::span<int64_t> v, core::Deadline) override {
    return check("MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()),
                                                MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
  }

 private:
  HostBuffer send_, recv_;
  MPI_Datatype type_ = MPI_FLOAT;
  MPI_Op op_ = MPI_SUM;
  int count_ = 0;
};

}  // namespace

core::Result<std::unique_ptr<CollectiveBackend>> makeMpiBackend() {
  if (!initialized())
    return Status(Code::kInvalidArgument,
                  "--transport mpi needs MPI: run under mpirun (e.g. mpirun -np 4 ccscope bench "
                  "allreduce --transport mpi --algo native)");
  return std::unique_ptr<CollectiveBackend>(std::make_unique<MpiBackend>());
}

}  // namespace ccscope::collectives::mpi
