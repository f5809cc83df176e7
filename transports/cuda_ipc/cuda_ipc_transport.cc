#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "core/cuda_status.h"
#include "transports/cuda_ipc/cuda_ipc_impl.h"
#include "transports/shm/shm_transport.h"

namespace ccscope::transports {

namespace cuda_ipc {

using core::Code;
using core::Layer;
using core::Status;

Status CudaIpcTransport::cudaErr(const char* call, cudaError_t e, int peer) const {
  return core::cudaStatusNamed(call, e, ops_.error_name(e), ops_.error_string(e), Layer::kGpu,
                               peer);
}

char* CudaIpcTransport::ctrlBuf(int peer, bool recv, uint32_t index) {
  const size_t per_peer = kCtrlRecvsPerPeer + kCtrlSendsPerPeer;
  return ctrl_mem_.data() +
         (static_cast<size_t>(peer) * per_peer + (recv ? 0 : kCtrlRecvsPerPeer) + index) *
             kCtrlSlotBytes;
}

Status CudaIpcTransport::connectControl(launch::Bootstrap& bs, core::Deadline deadline) {
  TransportOptions o = opts_;
  o.scope = opts_.scope + "cudaipc-";
  ctrl_ = makeShmTransport(o);
  if (Status s = ctrl_->connect(bs, deadline); !s.isOk())
    return s.prepend("cuda-ipc's control channel (shm: every rank must be on this node)");
  const size_t bytes =
      static_cast<size_t>(size_) * (kCtrlRecvsPerPeer + kCtrlSendsPerPeer) * kCtrlSlotBytes;
  ctrl_mem_ = core::HostBuffer(bytes);
  CCSCOPE_ASSIGN_OR_RETURN(ctrl_reg_, ctrl_->registerMemory(ctrl_mem_.data(), bytes));
  ctrl_owner_.assign(ctrl_->requests().capacity(), -1);
  return Status::ok();
}

// A stream per peer for copies of its messages, and the local events that say a copy ran.
Status CudaIpcTransport::createStreams() {
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    Peer& peer = peers_[p];
    CCSCOPE_RETURN_IF_ERROR(cudaErr("cudaStreamCreateWithFlags", ops_.stream_create(&peer.stream)));
    for (uint32_t i = 0; i < kEventsPerPeer; ++i) {
      cudaEvent_t e = nullptr;
      CCSCOPE_RETURN_IF_ERROR(cudaErr("cudaEventCreateWithFlags", ops_.event_create(&e)));
      peer.events.push_back(e);
      peer.free_events.push_back(i);
    }
  }
  return Status::ok();
}

Status CudaIpcTransport::connect(launch::Bootstrap& bs, core::Deadline deadline) {
  initTable(bs.rank(), bs.size());
  setSpinPolicy(opts_.local_ranks);
  int n = 0;
  CCSCOPE_RETURN_IF_ERROR(cudaErr("cudaGetDeviceCount", ops_.get_device_count(&n)));
  if (n == 0)
    return Status(Code::kUnavailable, "cudaGetDeviceCount: no CUDA device visible")
        .withLayer(Layer::kGpu);
  CCSCOPE_RETURN_IF_ERROR(cudaErr("cudaGetDevice", ops_.get_device(&device_)));
  peers_ = std::vector<Peer>(size_);
  CCSCOPE_RETURN_IF_ERROR(connectControl(bs, deadline));
  CCSCOPE_RETURN_IF_ERROR(choosePath(bs, deadline));
  CCSCOPE_RETURN_IF_ERROR(stream_path_ ? connectStream(bs, deadline) : createStreams());
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    peers_[p].ctrl_sends.assign(kCtrlSendsPerPeer, Request{});
    for (uint32_t i = 0; i < kCtrlRecvsPerPeer; ++i) CCSCOPE_RETURN_IF_ERROR(postControlRecv(p, i));
  }
  CCSCOPE_RETURN_IF_ERROR(bs.barrier(opts_.scope + "cuda-ipc-ready", deadline));
  if (stream_path_) flags_[rank_].unlinkName();  // every peer mapped it
  setConnected(true);
  return Status::ok();
}

core::Result<MemoryKeys> CudaIpcTransport::doRegister(char* base, size_t /*len*/,
                                                      MemoryKind /*kind*/, int /*device*/) {
  char* alloc = nullptr;
  size_t alloc_len = 0;
  if (cudaError_t e = ops_.address_range(base, &alloc, &alloc_len); e != cudaSuccess) {
    Status s = cudaErr("cuMemGetAddressRange", e);
    if (e == cudaErrorInvalidValue)
      return Status(Code::kInvalidArgument, fmt::format("cuMemGetAddressRange: {} is not device "
                                                        "memory",
                                                        static_cast<void*>(base)))
          .withLayer(Layer::kGpu)
          .withNative("cuMemGetAddressRange", e);
    return s;
  }
  auto x = std::make_unique<ExportedRange>();
  x->alloc_base = alloc;
  CCSCOPE_RETURN_IF_ERROR(
      cudaErr("cudaIpcGetMemHandle", ops_.ipc_get_mem_handle(&x->handle, alloc)));
  MemoryKeys k;
  k.handle = x.get();
  exported_.push_back(std::move(x));
  return k;
}

// The caller frees the memory next, and freeing it while a peer still maps it is undefined:
// every live peer is asked to close its mapping, and answers are awaited, within the op
// timeout (5 s at most) and never from a peer that died, closed or already let a wait expire.
void CudaIpcTransport::doDeregister(const MemoryRegion& mr) {
  const auto* x = static_cast<const ExportedRange*>(mr.keys().handle);
  if (x && connected() && !closed_) {
    Ctrl c;
    c.kind = CtrlKind::kUnmap;
    c.mem = x->handle;
    for (int p = 0; p < size_; ++p)
      if (p != rank_ && !peers_[p].dead) {
        ++peers_[p].unmaps_unanswered;
        sendControl(p, c);
      }
    waitForUnmaps();
  }
  std::erase_if(exported_, [&](const auto& e) { return e.get() == x; });
}

void CudaIpcTransport::waitForUnmaps() {
  auto waiting = [&](int p) {
    return p != rank_ && !peers_[p].dead && !peers_[p].silent && peers_[p].unmaps_unanswered;
  };
  auto answered = [&] {
    for (int p = 0; p < size_; ++p)
      if (waiting(p)) return false;
    return true;
  };
  const double bound =
      opts_.op_timeout_s > 0 ? std::min(opts_.op_timeout_s, kUnmapWaitSeconds) : kUnmapWaitSeconds;
  const core::Deadline until = core::Deadline::afterSeconds(bound);
  while (!answered() && !until.expired()) {
    progress().ignore();
    blockFor(20000);
  }
  std::string silent;
  for (int p = 0; p < size_; ++p)
    if (waiting(p)) {
      peers_[p].silent = true;
      silent += fmt::format("{}{}", silent.empty() ? "" : ", ", p);
    }
  if (!silent.empty())
    spdlog::warn(
        "cuda-ipc: rank {}: rank(s) {} did not confirm closing their mapping of a buffer within "
        "{:.3g} s (they drive no progress); freeing it anyway, and not waiting on them again "
        "until they answer",
        rank_, silent, bound);
}

void CudaIpcTransport::blockFor(int64_t max_ns) {
  // Copies finish on the GPU, which rings no doorbell here: a short sleep, then poll again.
  // The control channel's sleep also notices a peer that exited (shm checks its peers).
  max_ns = std::min<int64_t>(max_ns, 20000);
  if (ctrl_ && ctrl_->connected())
    ctrl_->sleepFor(max_ns);
  else
    std::this_thread::sleep_for(std::chrono::nanoseconds(max_ns));
}

void CudaIpcTransport::syncCopies(int p) {
  if (stream_path_)
    drainStream(kDrainSeconds);
  else if (peers_[p].stream)
    ops_.stream_synchronize(peers_[p].stream);
}

void CudaIpcTransport::failPeer(int p, const Status& why) {
  Peer& peer = peers_[p];
  if (peer.dead) return;
  if (stream_path_ && !flags_.empty()) completeByFlags(p);
  peer.dead = true;
  // Our copies write our own buffers: none may land after the caller got them back.
  if (stream_path_) releaseWaits(p, closed_ ? kPairClosed : kPairAborted);
  syncCopies(p);
  Status s = why;
  if (s.peer() < 0) s.withPeer(p);
  table_->failPeer(p, s);
  peer.sends.clear();
  peer.recvs.clear();
  peer.copies.clear();
  peer.announces.clear();
  peer.deferred.clear();
  peer.host_sends.clear();
}

// Our copies out of the peer's buffers stop here (failPeer waits for them). The peer may still
// read a send of ours it was told about and has not answered: reads only, of a buffer the
// caller owns again (transports/README.md).
void CudaIpcTransport::abortPeer(int p, const Status& why) {
  if (p < 0 || p >= size_ || p == rank_ || peers_.empty() || peers_[p].dead) return;
  Ctrl c;
  c.kind = CtrlKind::kAbort;
  sendControl(p, c);
  failPeer(p, why);
  if (ctrl_) ctrl_->progress().ignore();  // best effort: the abort may leave now
}

// Live peers learn that we closed, so none of them waits for an answer from us again.
void CudaIpcTransport::sayClosed() {
  if (!ctrl_ || !connected()) return;
  Ctrl c;
  c.kind = CtrlKind::kClosed;
  for (int p = 0; p < size_; ++p)
    if (p != rank_ && !peers_[p].dead) sendControl(p, c);
  ctrl_->progress().ignore();
  reapControl().ignore();
}

void CudaIpcTransport::close() {
  if (closed_ || peers_.empty()) return;
  sayClosed();
  closed_ = true;
  for (int p = 0; p < size_; ++p) {
    Peer& peer = peers_[p];
    if (p == rank_) continue;
    failPeer(p, Status(Code::kAborted, "cuda-ipc transport closed"));
    for (auto& [h, ptr] : peer.opened) ops_.ipc_close_mem_handle(ptr);
    for (cudaEvent_t e : peer.events) ops_.event_destroy(e);
    if (peer.stream) ops_.stream_destroy(peer.stream);
    peer = Peer{};
    peer.dead = true;
  }
  closeStream();
  ctrl_reg_.reset();
  if (ctrl_) ctrl_->close();
  setConnected(false);
}

}  // namespace cuda_ipc

std::unique_ptr<Transport> cuda_ipc::makeCudaIpcTransportOn(const TransportOptions& opts,
                                                            const cuda_ipc::CudaIpcOps& ops) {
  return std::make_unique<cuda_ipc::CudaIpcTransport>(opts, ops);
}

}  // namespace ccscope::transports
