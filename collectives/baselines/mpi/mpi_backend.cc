#include "collectives/baselines/mpi/mpi_backend.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/baselines/mpi/mpi_runtime.h"
#include "collectives/baselines/recorded_call.h"
#include "core/host_memory.h"

namespace ccscope::collectives::mpi {

using core::Code;
using core::DataType;
using core::ReduceOp;
using core::Status;

namespace {

core::Result<MPI_Datatype> mpiType(DataType t) {
  switch (t) {
    case DataType::kInt8:
      return MPI_INT8_T;
    case DataType::kUint8:
      return MPI_UINT8_T;
    case DataType::kInt32:
      return MPI_INT32_T;
    case DataType::kUint32:
      return MPI_UINT32_T;
    case DataType::kInt64:
      return MPI_INT64_T;
    case DataType::kUint64:
      return MPI_UINT64_T;
    case DataType::kFloat:
      return MPI_FLOAT;
    case DataType::kDouble:
      return MPI_DOUBLE;
    default:
      break;
  }
  return Status(Code::kUnsupported,
                fmt::format("MPI has no datatype for {}", core::dataTypeName(t)));
}

core::Result<MPI_Op> mpiOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kProd:
      return MPI_PROD;
    case ReduceOp::kMin:
      return MPI_MIN;
    case ReduceOp::kMax:
      return MPI_MAX;
    default:
      break;
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
  int rank() const override {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }
  int size() const override {
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
  }
  Status allocate(size_t max_bytes, core::HostPages pages) override {
    pages_ = pages;
    CCSCOPE_ASSIGN_OR_RETURN(send_,
                             core::HostBuffer::allocate(std::max<size_t>(max_bytes, 64), pages));
    CCSCOPE_ASSIGN_OR_RETURN(recv_,
                             core::HostBuffer::allocate(std::max<size_t>(max_bytes, 64), pages));
    return Status::ok();
  }
  std::string allocationNote() const override {
    return core::hugePageShortfall({&send_, &recv_}, pages_);
  }
  char* sendBuffer() override { return send_.data(); }
  char* recvBuffer() override { return recv_.data(); }
  Status prepare(const OpConfig& cfg) override {
    CCSCOPE_ASSIGN_OR_RETURN(type_, mpiType(cfg.dtype));
    if (isReduction(cfg.collective)) {
      CCSCOPE_ASSIGN_OR_RETURN(op_, mpiOp(cfg.op));
    }
    if (cfg.count > static_cast<uint64_t>(INT32_MAX))
      return Status(Code::kUnsupported, "MPI counts are limited to 2^31-1 elements");
    cfg_ = cfg;
    elem_ = core::dataTypeSize(cfg.dtype);
    block_ = static_cast<int>(cfg.count / size());
    if (cfg.collective == Collective::kAlltoallv) {
      int n = size(), r = rank();
      counts_.assign(4 * static_cast<size_t>(n), 0);
      for (int p = 0; p < n; ++p) {
        counts_[p] = static_cast<int>(cfg.plan->at(r, p));
        counts_[n + p] = static_cast<int>(cfg.plan->sendOffset(r, p));
        counts_[2 * n + p] = static_cast<int>(cfg.plan->at(p, r));
        counts_[3 * n + p] = static_cast<int>(cfg.plan->recvOffset(r, p));
      }
    }
    return Status::ok();
  }
  // MPI collectives take no deadline; the harness watchdog bounds them.
  Status run(bool in_place, core::Deadline d) override {
    return recordedCall(recorder_, cfg_, "native", [&] { return call(in_place, d); });
  }

  Status call(bool in_place, core::Deadline) {
    char* send = send_.data();
    char* recv = recv_.data();
    int count = static_cast<int>(cfg_.count), n = size(), r = rank();
    switch (cfg_.collective) {
      case Collective::kAllreduce:
        return check("MPI_Allreduce", MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count,
                                                    type_, op_, MPI_COMM_WORLD));
      case Collective::kReduceScatter: {
        Status s = check("MPI_Reduce_scatter_block",
                         MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : send, recv, block_,
                                                  type_, op_, MPI_COMM_WORLD));
        // MPI leaves an in-place result at the start; NCCL's (ours) is at this rank's block.
        if (in_place && r > 0)
          std::memmove(recv + static_cast<size_t>(block_) * r * elem_, recv, block_ * elem_);
        return s;
      }
      case Collective::kAllgather:
        return check("MPI_Allgather", MPI_Allgather(in_place ? MPI_IN_PLACE : send, block_, type_,
                                                    recv, block_, type_, MPI_COMM_WORLD));
      case Collective::kAlltoall:
        return check("MPI_Alltoall",
                     MPI_Alltoall(send, block_, type_, recv, block_, type_, MPI_COMM_WORLD));
      case Collective::kAlltoallv:
        return check(
            "MPI_Alltoallv",
            MPI_Alltoallv(send, counts_.data(), counts_.data() + n, type_, recv,
                          counts_.data() + 2 * static_cast<ptrdiff_t>(n),
                          counts_.data() + 3 * static_cast<ptrdiff_t>(n), type_, MPI_COMM_WORLD));
      case Collective::kBroadcast:
        // Out of place, the root's data starts in its send buffer (NCCL's semantics).
        if (!in_place && r == cfg_.root) std::memcpy(recv, send, cfg_.count * elem_);
        return check("MPI_Bcast", MPI_Bcast(recv, count, type_, cfg_.root, MPI_COMM_WORLD));
      case Collective::kSendrecv:
        return check("MPI_Sendrecv",
                     MPI_Sendrecv(send, count, type_, (r + 1) % n, 0, recv, count, type_,
                                  (r + n - 1) % n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    return Status(Code::kInternal, "unknown collective");
  }
  Status barrier(core::Deadline) override {
    return check("MPI_Barrier", MPI_Barrier(MPI_COMM_WORLD));
  }
  Status maxDoubles(std::span<double> v, core::Deadline) override {
    return check("MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()),
                                                MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  }
  Status sumInts(std::span<int64_t> v, core::Deadline) override {
    return check("MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()),
                                                MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
  }

 private:
  core::HostPages pages_ = core::HostPages::kBase;
  core::HostBuffer send_, recv_;
  MPI_Datatype type_ = MPI_FLOAT;
  MPI_Op op_ = MPI_SUM;
  OpConfig cfg_;
  size_t elem_ = 4;
  int block_ = 0;
  std::vector<int> counts_;  // alltoallv: send counts, send displs, recv counts, recv displs
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
