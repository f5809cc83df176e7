#include "transports/nccl/nccl_transport.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/cuda_status.h"
#include "transports/nccl/nccl_communicator.h"

namespace ccscope::transports {

using core::Code;
using core::Deadline;
using core::Layer;
using core::Status;

namespace {

// Sleeps between polls of what only the GPU or NCCL's threads finish.
constexpr int64_t kPollSleepNs = 20000;
// The bound on enqueueing a group when TransportOptions gives none (lazy connection set-up).
constexpr double kDefaultEnqueueSeconds = 300;

class NcclTransport final : public Transport, public NcclCommunicator {
 public:
  explicit NcclTransport(TransportOptions o) : opts_(std::move(o)) {}
  ~NcclTransport() override { close(); }
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  const char* name() const override { return "nccl"; }
  Capabilities caps() const override {
    Capabilities c;
    c.memory_kinds = {MemoryKind::kCuda};
    c.stream_ordered = true;
    c.verifies_tags = false;
    // A group moves small messages in a few microseconds of launch; smaller segments only add
    // groups (NCCL's own p2p chunk is 512 KiB on NVLink).
    c.min_segment_bytes = size_t{256} * 1024;
    return c;
  }
  std::string setupNote() const override;
  Status connect(launch::Bootstrap& bs, Deadline deadline) override;
  void beginBatch() override;
  Status endBatch() override;
  Status progress() override;
  void abortPeer(int peer, const Status& why) override;
  void close() override;

  ncclComm_t comm() const override { return comm_; }
  cudaStream_t stream() const override { return stream_; }
  Status runGroup(const char* call, const std::function<ncclResult_t()>& enqueue, Deadline deadline,
                  bool wait) override;
  Status waitUntil(const char* call, const std::function<core::Result<bool>()>& passed,
                   Deadline deadline) override {
    CCSCOPE_RETURN_IF_ERROR(usable(call));
    Status s = waitStream(call, deadline, &passed);
    if (!s.isOk()) failAll(s);
    return s;
  }
  Status settleCall(const char* call, ncclResult_t r, Deadline deadline) override;
  bool failed() const override { return failed_; }

 protected:
  void blockFor(int64_t max_ns) override {
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(max_ns, kPollSleepNs)));
  }
  core::Result<Request> doPost(Dir dir, int peer, uint32_t tag, const MemoryRegion& view) override;
  void cancelPending(uint32_t slot) override;

 private:
  struct Group {
    cudaEvent_t done = nullptr;
    std::vector<uint32_t> slots;
  };
  // Polls the communicator until it left ncclInProgress (init, a group being enqueued).
  Status settle(const char* call, Deadline deadline);
  Status closeGroup();
  // Polls until the stream has passed all it holds (or `passed` says it reached its point), or
  // NCCL reports an error, or the deadline.
  Status waitStream(const char* call, Deadline deadline,
                    const std::function<core::Result<bool>()>* passed = nullptr);
  // A failure left by a call inside a capture aborts now; an aborted communicator fails `call`.
  Status usable(const char* call);
  void reapGroups();
  void failAll(const Status& why);

  TransportOptions opts_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool own_stream_ = false;
  int device_ = -1;
  bool in_batch_ = false;
  Status batch_error_;
  std::vector<uint32_t> open_slots_;  // posted in the open group
  std::deque<Group> groups_;          // enqueued, in stream order
  std::vector<cudaEvent_t> free_events_;
  bool failed_ = false;
  bool closed_ = false;
  Status deferred_;  // a failure inside a CUDA-graph capture, not aborted yet
};

Status NcclTransport::settle(const char* call, Deadline deadline) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    if (ncclResult_t r = ncclCommGetAsyncError(comm_, &state); r != ncclSuccess)
      return ncclStatus("ncclCommGetAsyncError", r, comm_);
    if (state == ncclSuccess) return Status::ok();
    if (state != ncclInProgress) return ncclStatus(call, state, comm_);
    if (deadline.expired())
      return Status(Code::kDeadlineExceeded,
                    fmt::format("{}: rank {} of {} still in progress at the deadline: a rank that "
                                "never called it, or NCCL waiting on the network (NCCL_DEBUG=INFO "
                                "says where)",
                                call, rank_, size_))
          .withLayer(Layer::kLibrary);
    blockFor(kPollSleepNs);
  }
}

Status NcclTransport::connect(launch::Bootstrap& bs, Deadline deadline) {
  initTable(bs.rank(), bs.size());
  setSpinPolicy(opts_.local_ranks);
  CCSCOPE_RETURN_IF_ERROR(ncclUsable());
  CCSCOPE_CUDA_RETURN("cudaGetDevice", cudaGetDevice(&device_));
  if (opts_.cuda_stream) {
    stream_ = static_cast<cudaStream_t>(opts_.cuda_stream);
  } else {
    CCSCOPE_CUDA_RETURN("cudaStreamCreateWithFlags",
                        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    own_stream_ = true;
  }
  ncclUniqueId id{};
  CCSCOPE_RETURN_IF_ERROR(
      exchangeUniqueId(bs, opts_.scope + "nccl-unique-id", rank_ == 0, deadline, id));
  // Non-blocking, so that init and every enqueue are polled under our deadlines.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
  Status s = r == ncclSuccess || r == ncclInProgress
                 ? settle("ncclCommInitRankConfig", deadline)
                 : ncclStatus("ncclCommInitRankConfig", r, comm_);
  if (!s.isOk()) {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    return s;
  }
  setConnected(true);
  return Status::ok();
}

std::string NcclTransport::setupNote() const { return ncclSetupNote(device_); }

void NcclTransport::beginBatch() {
  if (in_batch_ || failed_) return;
  in_batch_ = true;
  if (ncclResult_t r = ncclGroupStart(); r != ncclSuccess)
    batch_error_ = ncclStatus("ncclGroupStart", r, comm_);
}

// The group is enqueued once the communicator settles; an event after it finishes its requests.
Status NcclTransport::closeGroup() {
  Group g;
  g.slots.swap(open_slots_);
  if (g.slots.empty()) return Status::ok();
  if (free_events_.empty()) {
    cudaEvent_t e = nullptr;
    CCSCOPE_CUDA_RETURN("cudaEventCreateWithFlags",
                        cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    free_events_.push_back(e);
  }
  g.done = free_events_.back();
  free_events_.pop_back();
  groups_.push_back(std::move(g));
  CCSCOPE_CUDA_RETURN("cudaEventRecord", cudaEventRecord(groups_.back().done, stream_));
  return Status::ok();
}

Status NcclTransport::endBatch() {
  if (!in_batch_) return Status::ok();
  in_batch_ = false;
  Status s = std::exchange(batch_error_, Status::ok());
  if (ncclResult_t r = ncclGroupEnd(); s.isOk() && r != ncclSuccess && r != ncclInProgress)
    s = ncclStatus("ncclGroupEnd", r, comm_);
  const double bound = opts_.op_timeout_s > 0 ? opts_.op_timeout_s : kDefaultEnqueueSeconds;
  if (s.isOk()) s = settle("ncclGroupEnd", Deadline::afterSeconds(bound));
  if (s.isOk()) s = closeGroup();
  if (!s.isOk()) failAll(s);
  return s;
}

core::Result<Request> NcclTransport::doPost(Dir dir, int peer, uint32_t tag,
                                            const MemoryRegion& view) {
  CCSCOPE_ASSIGN_OR_RETURN(Request q, table_->open(dir, peer, tag, view.base(), view.len()));
  const bool alone = !in_batch_;
  if (alone) beginBatch();
  const ncclResult_t r = dir == Dir::kSend
                             ? ncclSend(view.base(), view.len(), ncclUint8, peer, comm_, stream_)
                             : ncclRecv(view.base(), view.len(), ncclUint8, peer, comm_, stream_);
  open_slots_.push_back(q.slot);
  if (r != ncclSuccess && r != ncclInProgress && batch_error_.isOk())
    batch_error_ = ncclStatus(dir == Dir::kSend ? "ncclSend" : "ncclRecv", r, comm_).withPeer(peer);
  if (alone) endBatch().ignore();  // a failure fails the request (failAll)
  return q;
}

Status NcclTransport::progress() {
  if (failed_ || !comm_) return Status::ok();
  ncclResult_t state = ncclSuccess;
  ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
  if (r != ncclSuccess || (state != ncclSuccess && state != ncclInProgress)) {
    failAll(ncclStatus("ncclCommGetAsyncError", r != ncclSuccess ? r : state, comm_));
    return Status::ok();
  }
  reapGroups();
  return Status::ok();
}

// Finishes the requests of every group the stream has passed, in stream order.
void NcclTransport::reapGroups() {
  while (!groups_.empty()) {
    Group& g = groups_.front();
    const cudaError_t e = cudaEventQuery(g.done);
    if (e == cudaErrorNotReady) break;
    if (e != cudaSuccess) {
      failAll(core::cudaStatus("cudaEventQuery", e));
      break;
    }
    for (uint32_t slot : g.slots) {
      table_->addBytes(slot, table_->slot(slot).len);
      table_->complete(slot);
    }
    free_events_.push_back(g.done);
    groups_.pop_front();
  }
}

// NCCL stops a communicator's kernels only as a whole: after ncclCommAbort no buffer of a
// pending request is touched, and every request fails.
void NcclTransport::failAll(const Status& why) {
  if (failed_) return;
  failed_ = true;
  if (in_batch_) {  // never abort inside a group: this thread's group depth would stay raised
    ncclGroupEnd();
    in_batch_ = false;
  }
  if (comm_) ncclCommAbort(comm_);
  comm_ = nullptr;
  for (Group& g : groups_) free_events_.push_back(g.done);
  groups_.clear();
  open_slots_.clear();
  for (int p = 0; p < size_; ++p)
    if (p != rank_) table_->failPeer(p, why);
}

Status NcclTransport::usable(const char* call) {
  if (!deferred_.isOk()) failAll(std::exchange(deferred_, Status::ok()));
  if (failed_ || !comm_)
    return Status(Code::kAborted, fmt::format("{}: the NCCL communicator was aborted before", call))
        .withLayer(Layer::kLibrary);
  return Status::ok();
}

Status NcclTransport::runGroup(const char* call, const std::function<ncclResult_t()>& enqueue,
                               Deadline deadline, bool wait) {
  if (in_batch_)
    return Status(Code::kInternal, fmt::format("{}: called inside an open batch", call));
  CCSCOPE_RETURN_IF_ERROR(usable(call));
  Status s;
  if (ncclResult_t r = ncclGroupStart(); r != ncclSuccess)
    return ncclStatus("ncclGroupStart", r, comm_);
  const ncclResult_t e = enqueue();
  const ncclResult_t g = ncclGroupEnd();
  if (e != ncclSuccess && e != ncclInProgress)
    s = ncclStatus(call, e, comm_);
  else if (g != ncclSuccess && g != ncclInProgress)
    s = ncclStatus("ncclGroupEnd", g, comm_);
  if (s.isOk()) s = settle(call, deadline);
  if (s.isOk() && wait) s = waitStream(call, deadline);
  if (!s.isOk() && wait) failAll(s);
  if (!s.isOk() && !wait) deferred_ = s;  // never abort inside a capture
  return s;
}

Status NcclTransport::settleCall(const char* call, ncclResult_t r, Deadline deadline) {
  Status s =
      r == ncclSuccess || r == ncclInProgress ? settle(call, deadline) : ncclStatus(call, r, comm_);
  if (!s.isOk()) failAll(s);
  return s;
}

Status NcclTransport::waitStream(const char* call, Deadline deadline,
                                 const std::function<core::Result<bool>()>* passed) {
  // Spin first, as waits on the other transports do: a sleep on the first poll would add tens
  // of microseconds to every small collective.
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(spin_ns_);
  for (;;) {
    if (passed) {
      CCSCOPE_ASSIGN_OR_RETURN(bool reached, (*passed)());
      if (reached) return Status::ok();
    } else {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return Status::ok();
      if (e != cudaErrorNotReady) return core::cudaStatus("cudaStreamQuery", e);
    }
    ncclResult_t state = ncclSuccess;
    if (ncclResult_t r = ncclCommGetAsyncError(comm_, &state); r != ncclSuccess)
      return ncclStatus("ncclCommGetAsyncError", r, comm_);
    if (state != ncclSuccess && state != ncclInProgress) return ncclStatus(call, state, comm_);
    if (deadline.expired())
      return Status(
                 Code::kDeadlineExceeded,
                 fmt::format("{}: rank {} of {}: not finished at the deadline (a rank that never "
                             "called it, or NCCL waiting on a peer)",
                             call, rank_, size_))
          .withLayer(Layer::kLibrary);
    if (std::chrono::steady_clock::now() < spin_until) {
      if (yield_in_spin_) std::this_thread::yield();
      continue;
    }
    blockFor(kPollSleepNs);
  }
}

void NcclTransport::abortPeer(int peer, const Status& why) {
  if (peer < 0 || peer >= size_ || peer == rank_) return;
  Status s = why;
  failAll(s.prepend(
      fmt::format("communicator aborted for rank {} (NCCL has no per-peer abort)", peer)));
}

// An enqueued operation cannot be taken off the stream: only aborting the communicator keeps a
// cancelled receive from writing its buffer later.
void NcclTransport::cancelPending(uint32_t slot) {
  if (!failed_) reapGroups();  // one the stream already passed is only released
  const RequestRecord& rec = table_->slot(slot);
  if (rec.state != ReqState::kPending) return;
  failAll(Status(Code::kAborted, fmt::format("a request with rank {} was cancelled, and NCCL "
                                             "cannot withdraw one: the communicator was aborted",
                                             rec.peer))
              .withLayer(Layer::kLibrary));
}

void NcclTransport::close() {
  if (closed_) return;
  closed_ = true;
  if (!deferred_.isOk()) failAll(std::exchange(deferred_, Status::ok()));
  if (in_batch_) failAll(Status(Code::kAborted, "nccl transport closed inside a batch"));
  if (comm_ && groups_.empty() && open_slots_.empty()) {
    // Nothing pending: finalize (flushes NCCL's proxies), then destroy; abort if that stalls.
    const ncclResult_t r = ncclCommFinalize(comm_);
    if ((r == ncclSuccess || r == ncclInProgress) &&
        settle("ncclCommFinalize", Deadline::afterSeconds(10)).isOk()) {
      ncclCommDestroy(comm_);
      comm_ = nullptr;
    }
  }
  if (table_) failAll(Status(Code::kAborted, "nccl transport closed").withLayer(Layer::kLibrary));
  for (cudaEvent_t e : free_events_) cudaEventDestroy(e);
  free_events_.clear();
  if (own_stream_ && stream_) cudaStreamDestroy(stream_);
  stream_ = nullptr;
  setConnected(false);
}

}  // namespace

NcclCommunicator* ncclCommunicator(Transport& t) {
  auto* n = dynamic_cast<NcclTransport*>(&t);
  return n && n->comm() ? n : nullptr;
}

std::unique_ptr<Transport> makeNcclTransport(const TransportOptions& opts) {
  return std::make_unique<NcclTransport>(opts);
}

}  // namespace ccscope::transports
