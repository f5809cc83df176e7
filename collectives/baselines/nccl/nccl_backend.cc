#include "collectives/baselines/nccl/nccl_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "collectives/baselines/recorded_call.h"
#include "transports/nccl/nccl_communicator.h"

namespace ccscope::collectives::nccl {

using core::Code;
using core::DataType;
using core::ReduceOp;
using core::Status;
using transports::NcclCommunicator;

namespace {

ncclDataType_t ncclType(DataType t) {
  switch (t) {
    case DataType::kInt8:
      return ncclInt8;
    case DataType::kUint8:
      return ncclUint8;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kUint32:
      return ncclUint32;
    case DataType::kInt64:
      return ncclInt64;
    case DataType::kUint64:
      return ncclUint64;
    case DataType::kHalf:
      return ncclFloat16;
    case DataType::kBfloat16:
      return ncclBfloat16;
    case DataType::kFloat:
      return ncclFloat32;
    case DataType::kDouble:
      return ncclFloat64;
  }
  return ncclUint8;
}

ncclRedOp_t ncclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kProd:
      return ncclProd;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kAvg:
      return ncclAvg;
  }
  return ncclSum;
}

const char* ncclCallName(Collective c) {
  switch (c) {
    case Collective::kAllreduce:
      return "ncclAllReduce";
    case Collective::kReduceScatter:
      return "ncclReduceScatter";
    case Collective::kAllgather:
      return "ncclAllGather";
    case Collective::kBroadcast:
      return "ncclBroadcast";
    case Collective::kAlltoall:
      return "ncclAlltoAll";
    case Collective::kAlltoallv:
    case Collective::kSendrecv:
      return "ncclSend/ncclRecv";
  }
  return "nccl";
}

// Registration calls are bounded like set-up, not like one collective.
constexpr double kRegisterSeconds = 60;

// A device buffer and its registration with the communicator.
struct NcclBuffer {
  char* data = nullptr;
  size_t bytes = 0;
  void* handle = nullptr;  // ncclCommRegister's
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  ncclWindow_t window = nullptr;
#endif
};

class NcclBackend final : public CollectiveBackend {
 public:
  NcclBackend(transports::Transport& t, NcclCommunicator& c, DeviceRuntime& d, HarnessChannel* h,
              Registration reg)
      : t_(t), c_(c), device_(d), harness_(h), reg_(reg) {}
  ~NcclBackend() override {
    release(send_);
    release(recv_);
  }
  NcclBackend(const NcclBackend&) = delete;
  NcclBackend& operator=(const NcclBackend&) = delete;

  std::string algorithm() const override { return "native"; }
  std::string transport() const override { return "nccl"; }
  std::string setupNote() const override {
    static const char* const kNames[] = {"none", "local (ncclCommRegister)",
                                         "symmetric (ncclCommWindowRegister)"};
    return fmt::format("native: NCCL's collectives; buffer registration: {}",
                       kNames[static_cast<int>(reg_)]);
  }
  int rank() const override { return t_.rank(); }
  int size() const override { return t_.size(); }
  Status allocate(size_t max_bytes, core::HostPages) override {
    const size_t bytes = std::max<size_t>(max_bytes, 64);
    CCSCOPE_RETURN_IF_ERROR(acquire(send_, bytes));
    return acquire(recv_, bytes);
  }
  char* sendBuffer() override { return send_.data; }
  char* recvBuffer() override { return recv_.data; }
  DeviceRuntime* device() override { return &device_; }
  std::string dataPath() const override { return "device"; }
  Status prepare(const OpConfig& cfg) override {
    cfg_ = cfg;
    elem_ = core::dataTypeSize(cfg.dtype);
    geo_ = geometry(cfg.collective, cfg.count, size(), rank(), cfg.plan);
    return Status::ok();
  }
  Status run(bool in_place, core::Deadline d) override {
    return recordedCall(recorder_, cfg_, "native", [&] { return call(in_place, d); });
  }
  bool capturable() const override { return true; }
  Status enqueue(bool in_place, core::Deadline d) override { return call(in_place, d, false); }
  // One flight-recorder entry per drain (a graph launch, or a -z 0 leg): its collectives ran
  // on the stream without the host waiting on each.
  Status drain(core::Deadline d, const std::function<core::Result<bool>()>& passed) override {
    return recordedCall(recorder_, cfg_, "native-drain",
                        [&] { return c_.waitUntil(ncclCallName(cfg_.collective), passed, d); });
  }
  Status barrier(core::Deadline d) override { return harness_->barrier(d); }
  Status maxDoubles(std::span<double> v, core::Deadline d) override {
    return harness_->maxDoubles(v, d);
  }
  Status sumInts(std::span<int64_t> v, core::Deadline d) override {
    return harness_->sumInts(v, d);
  }

 private:
  Status acquire(NcclBuffer& b, size_t bytes);
  void release(NcclBuffer& b);
  Status call(bool in_place, core::Deadline d, bool wait = true);
  ncclResult_t enqueueCall(const char* send, char* recv);

  transports::Transport& t_;
  NcclCommunicator& c_;
  DeviceRuntime& device_;
  HarnessChannel* harness_;
  Registration reg_;
  NcclBuffer send_, recv_;
  OpConfig cfg_;
  Geometry geo_;
  size_t elem_ = 4;
};

// Every buffer comes from ncclMemAlloc (cuMem, as nccl-tests allocates from NCCL 2.19 on), so
// -R 1 registers the memory NVLS and the network can use without a copy.
Status NcclBackend::acquire(NcclBuffer& b, size_t bytes) {
  release(b);
  void* p = nullptr;
  if (ncclResult_t r = ncclMemAlloc(&p, bytes); r != ncclSuccess)
    return transports::ncclStatus("ncclMemAlloc", r, c_.comm());
  b = NcclBuffer{};
  b.data = static_cast<char*>(p);
  b.bytes = bytes;
  const core::Deadline d = core::Deadline::afterSeconds(kRegisterSeconds);
  if (reg_ == Registration::kSymmetric) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
    // Collective: every rank registers its buffers in the same order.
    return c_.settleCall(
        "ncclCommWindowRegister",
        ncclCommWindowRegister(c_.comm(), b.data, bytes, &b.window, NCCL_WIN_COLL_SYMMETRIC), d);
#else
    return Status(Code::kUnsupported, "symmetric registration (-R 2) needs NCCL 2.27 or later");
#endif
  }
  if (reg_ == Registration::kLocal)
    return c_.settleCall("ncclCommRegister", ncclCommRegister(c_.comm(), b.data, bytes, &b.handle),
                         d);
  return Status::ok();
}

// Deregistration is skipped on an aborted communicator (it holds nothing any more).
void NcclBackend::release(NcclBuffer& b) {
  if (!b.data) return;
  const bool live = !c_.failed() && c_.comm();
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  if (b.window && live)
    c_.settleCall("ncclCommWindowDeregister", ncclCommWindowDeregister(c_.comm(), b.window),
                  core::Deadline::afterSeconds(kRegisterSeconds))
        .ignore();
#endif
  if (b.handle && live)
    c_.settleCall("ncclCommDeregister", ncclCommDeregister(c_.comm(), b.handle),
                  core::Deadline::afterSeconds(kRegisterSeconds))
        .ignore();
  ncclMemFree(b.data);
  b = NcclBuffer{};
}

// One collective, enqueued inside the transport's group (runGroup).
ncclResult_t NcclBackend::enqueueCall(const char* send, char* recv) {
  const ncclComm_t comm = c_.comm();
  const cudaStream_t st = c_.stream();
  const ncclDataType_t type = ncclType(cfg_.dtype);
  const int n = size(), r = rank();
  const size_t count = cfg_.count, block = count / static_cast<size_t>(n);
  switch (cfg_.collective) {
    case Collective::kAllreduce:
      return ncclAllReduce(send, recv, count, type, ncclOp(cfg_.op), comm, st);
    case Collective::kReduceScatter:
      return ncclReduceScatter(send, recv, block, type, ncclOp(cfg_.op), comm, st);
    case Collective::kAllgather:
      return ncclAllGather(send, recv, block, type, comm, st);
    case Collective::kBroadcast:
      return ncclBroadcast(send, recv, count, type, cfg_.root, comm, st);
    case Collective::kAlltoall:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
      return ncclAlltoAll(send, recv, block, type, comm, st);
#else
      for (int p = 0; p < n; ++p) {
        if (ncclResult_t e = ncclSend(send + block * p * elem_, block, type, p, comm, st);
            e != ncclSuccess && e != ncclInProgress)
          return e;
        if (ncclResult_t e = ncclRecv(recv + block * p * elem_, block, type, p, comm, st);
            e != ncclSuccess && e != ncclInProgress)
          return e;
      }
      return ncclSuccess;
#endif
    case Collective::kAlltoallv:
      for (int p = 0; p < n; ++p) {
        if (ncclResult_t e = ncclSend(send + cfg_.plan->sendOffset(r, p) * elem_,
                                      cfg_.plan->at(r, p), type, p, comm, st);
            e != ncclSuccess && e != ncclInProgress)
          return e;
        if (ncclResult_t e = ncclRecv(recv + cfg_.plan->recvOffset(r, p) * elem_,
                                      cfg_.plan->at(p, r), type, p, comm, st);
            e != ncclSuccess && e != ncclInProgress)
          return e;
      }
      return ncclSuccess;
    case Collective::kSendrecv: {
      if (ncclResult_t e = ncclSend(send, count, type, (r + 1) % n, comm, st);
          e != ncclSuccess && e != ncclInProgress)
        return e;
      return ncclRecv(recv, count, type, (r + n - 1) % n, comm, st);
    }
  }
  return ncclInvalidArgument;
}

// In place, input and output sit in the receive buffer where geometry() puts them, which is
// what NCCL's in-place forms are (reduce-scatter's output at this rank's block, allgather's
// input there).
Status NcclBackend::call(bool in_place, core::Deadline d, bool wait) {
  char* out = recv_.data + (in_place ? geo_.in_place_out_offset * elem_ : 0);
  const char* in = in_place ? recv_.data + geo_.in_place_in_offset * elem_ : send_.data;
  return c_.runGroup(
      ncclCallName(cfg_.collective), [&] { return enqueueCall(in, out); }, d, wait);
}

}  // namespace

core::Result<std::unique_ptr<CollectiveBackend>> makeNcclBackend(transports::Transport& t,
                                                                 DeviceRuntime& device,
                                                                 HarnessChannel* harness,
                                                                 Registration reg) {
  NcclCommunicator* c = transports::ncclCommunicator(t);
  if (!c) return Status(Code::kInvalidArgument, "--algo native needs a connected --transport nccl");
  if (!harness) return Status(Code::kInternal, "the NCCL baseline needs a harness channel");
  return std::unique_ptr<CollectiveBackend>(
      std::make_unique<NcclBackend>(t, *c, device, harness, reg));
}

}  // namespace ccscope::collectives::nccl
