// The CUDA-IPC transport's stream path: each post becomes work on the rank's stream (the
// compute backend's), ordered by flags in mapped host memory (cuda_ipc_flags.h), so that no
// host thread takes part per message once it is enqueued. The host path (cuda_ipc_data.cc)
// runs where a rank has no stream to give or its driver lacks stream memory operations.
#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

#include "transports/common/host_identity.h"
#include "transports/common/pair_errors.h"
#include "transports/cuda_ipc/cuda_ipc_impl.h"

namespace ccscope::transports::cuda_ipc {

using core::Code;
using core::Layer;
using core::Status;

std::string CudaIpcTransport::streamPathRefusal() const {
  const char* env = std::getenv("CCSCOPE_CUDA_IPC_PATH");
  if (env && std::string_view(env) == "host") return "CCSCOPE_CUDA_IPC_PATH=host";
  if (!opts_.cuda_stream) return "no rank stream to order the copies on";
  if (!ops_.stream_ops_available) return "no stream memory operations in this build";
  if (cudaError_t e = ops_.stream_ops_available(); e != cudaSuccess)
    return fmt::format("the driver lacks stream memory operations ({})", ops_.error_name(e));
  return "";
}

// Every rank takes the same path: one rank that cannot take the stream path keeps all on the
// host path, which then names it.
Status CudaIpcTransport::choosePath(launch::Bootstrap& bs, core::Deadline deadline) {
  std::string why = streamPathRefusal();
  CCSCOPE_RETURN_IF_ERROR(bs.put(fmt::format("{}cudaipc-path/{}", opts_.scope, rank_),
                                 why.empty() ? "stream" : "host:" + why));
  for (int p = 0; p < size_ && why.empty(); ++p) {
    if (p == rank_) continue;
    CCSCOPE_ASSIGN_OR_RETURN(std::string v,
                             bs.get(fmt::format("{}cudaipc-path/{}", opts_.scope, p), deadline));
    if (v != "stream") why = fmt::format("rank {}: {}", p, v.substr(v.find(':') + 1));
  }
  stream_path_ = why.empty();
  path_note_ = stream_path_ ? "cuda-ipc: stream path (copies and flags enqueued on the rank's "
                              "stream; no host round trip per message)"
                            : "cuda-ipc: host progress path (" + why + ")";
  return Status::ok();
}

// This rank's flag segment, and a mapping of each peer's, each registered with CUDA.
Status CudaIpcTransport::connectStream(launch::Bootstrap& bs, core::Deadline deadline) {
  rank_stream_ = static_cast<cudaStream_t>(opts_.cuda_stream);
  flags_.resize(size_);
  flags_dev_.assign(size_, nullptr);
  const std::string name = uniqueShmName("cudaipc-flags", bs.jobToken(), opts_.scope, rank_);
  CCSCOPE_ASSIGN_OR_RETURN(flags_[rank_], FlagSegment::create(name, size_));
  CCSCOPE_RETURN_IF_ERROR(bs.put(fmt::format("{}cudaipc-flags/{}", opts_.scope, rank_), name));
  for (int p = 0; p < size_; ++p) {
    if (p != rank_) {
      CCSCOPE_ASSIGN_OR_RETURN(std::string v,
                               bs.get(fmt::format("{}cudaipc-flags/{}", opts_.scope, p), deadline));
      CCSCOPE_ASSIGN_OR_RETURN(flags_[p], FlagSegment::open(v, size_));
    }
    void* dev = nullptr;
    CCSCOPE_RETURN_IF_ERROR(cudaErr(
        "cudaHostRegister", ops_.host_register(flags_[p].base(), flags_[p].bytes(), &dev), p));
    flags_dev_[p] = static_cast<char*>(dev);
  }
  return Status::ok();
}

char* CudaIpcTransport::devWord(int owner, const uint32_t& word) const {
  return flags_dev_[owner] + (reinterpret_cast<const char*>(&word) - flags_[owner].base());
}

// Spins, then sleeps, until `ready()`, the peer fails, or the bound passes; the control channel
// is driven meanwhile, so a peer that exits or aborts is noticed here.
template <class Ready>
Status CudaIpcTransport::hostWait(int p, Ready&& ready, const char* what, uint32_t msg) {
  const double bound = opts_.op_timeout_s > 0 ? opts_.op_timeout_s : kHostWaitSeconds;
  const core::Deadline until = core::Deadline::afterSeconds(bound);
  for (uint32_t polls = 0;; ++polls) {
    if (ready()) return Status::ok();
    if (peers_[p].dead || closed_) {
      const Status& e = table_->peerError(p);
      return e.isOk() ? Status(Code::kAborted, "cuda-ipc transport closed") : e;
    }
    if (loadWord(outPair(p).abort) || loadWord(inPair(p).abort)) {
      checkAborts();
      continue;
    }
    if (polls < 64) continue;
    if (until.expired())
      return Status(Code::kDeadlineExceeded,
                    fmt::format("cuda-ipc: rank {} waited {:.3g} s for rank {}'s host: {} "
                                "(message {})",
                                rank_, bound, p, what, msg))
          .withLayer(Layer::kApplication)
          .withPeer(p);
    if (ctrl_) {
      ctrl_->progress().ignore();
      reapControl().ignore();
    }
    blockFor(polls < 1024 ? 0 : 20000);
  }
}

// The sender's descriptor of message `msg`, once the ring has room for it.
Status CudaIpcTransport::publish(int p, uint32_t msg, uint32_t tag, const MemoryRegion& view) {
  PairOut& out = outPair(p);
  CCSCOPE_RETURN_IF_ERROR(hostWait(
      p, [&] { return msg - loadWord(out.taken) < kRing; }, "room to announce a message", msg));
  Desc& d = out.ring[msg % kRing];
  d = Desc{};
  d.len = view.len();
  d.tag = tag;
  if (const auto* x = static_cast<const ExportedRange*>(view.keys().handle)) {
    d.mem = x->handle;
    d.offset = static_cast<uint64_t>(view.base() - x->alloc_base);
    d.has_mem = 1;
  }
  storeWord(out.posted, msg + 1);
  return Status::ok();
}

// In a batch, a post is enqueued with the batch (flushBatch) and finishes in stream order. Alone,
// it must not block the stream for what the caller posts next (a receive posted after a send
// to the same peer, which on a GPU would then wait for its peer behind that send): a send only
// marks its source ready and finishes when the receiver's "done" reached it, read by the host;
// a receive is enqueued once its sender's host announced it.
core::Result<Request> CudaIpcTransport::streamPost(Dir dir, int p, uint32_t tag,
                                                   const MemoryRegion& view) {
  CCSCOPE_ASSIGN_OR_RETURN(Request q, table_->open(dir, p, tag, view.base(), view.len()));
  Peer& peer = peers_[p];
  if (dir == Dir::kRecv) {
    const Pending x{dir, p, q.slot, static_cast<uint32_t>(peer.recv_seq++), q.gen};
    if (in_batch_) {
      batch_.push_back(x);
    } else {
      peer.deferred.push_back(x);
      startDeferred(p, false);
    }
    return q;
  }
  const auto msg = static_cast<uint32_t>(peer.send_seq);
  if (Status s = publish(p, msg, tag, view); !s.isOk()) {
    table_->fail(q.slot, s);
    return q;
  }
  ++peer.send_seq;
  const Pending x{dir, p, q.slot, msg, q.gen};
  if (in_batch_) {
    batch_.push_back(x);
    return q;
  }
  if (Status s = sendFlag(x, false); !s.isOk()) {
    abortPeer(p, s);
    return q;
  }
  peer.host_sends.push_back(x);
  return q;
}

// Receives posted alone, in their order, as their senders' hosts announce them (`block`: wait
// for each announcement, as a batch that follows them must).
void CudaIpcTransport::startDeferred(int p, bool block) {
  Peer& peer = peers_[p];
  while (!peer.dead && !peer.deferred.empty()) {
    const Pending x = peer.deferred.front();
    if (!block && !reached(loadWord(inPair(p).posted), x.msg + 1)) return;
    peer.deferred.pop_front();
    Status s = enqueueRecv(x);
    if (s.isOk()) s = recordFor({x});
    if (!s.isOk()) {
      abortPeer(p, s);
      return;
    }
  }
}

void CudaIpcTransport::pollHostSends(int p) {
  Peer& peer = peers_[p];
  while (!peer.dead && !peer.host_sends.empty()) {
    const Pending x = peer.host_sends.front();
    if (!reached(loadWord(outPair(p).done), x.msg + 1)) return;
    peer.host_sends.pop_front();
    table_->addBytes(x.slot, table_->slot(x.slot).len);
    table_->complete(x.slot);
  }
}

Status CudaIpcTransport::endBatch() {
  in_batch_ = false;
  return stream_path_ ? flushBatch() : Status::ok();
}

// A send's stream work: its source is ready (`wait` false), or wait until its reader copied it.
Status CudaIpcTransport::sendFlag(const Pending& x, bool wait) {
  PairOut& out = outPair(x.peer);
  return wait ? cudaErr("cuStreamWaitValue32",
                        ops_.stream_wait_value32(rank_stream_, devWord(rank_, out.done), x.msg + 1),
                        x.peer)
              : cudaErr(
                    "cuStreamWriteValue32",
                    ops_.stream_write_value32(rank_stream_, devWord(rank_, out.ready), x.msg + 1),
                    x.peer);
}

// One receive: the sender's descriptor (checked against the receive), then on the stream:
// wait until the source is ready, copy out of it, tell the sender it was read.
Status CudaIpcTransport::enqueueRecv(const Pending& r) {
  PairOut& in = inPair(r.peer);
  RequestRecord& rec = table_->slot(r.slot);
  Status s = hostWait(
      r.peer, [&] { return reached(loadWord(in.posted), r.msg + 1); }, "a matching send", r.msg);
  if (!s.isOk()) return s;
  const Desc d = in.ring[r.msg % kRing];
  storeWord(in.taken, r.msg + 1);
  if (d.tag != rec.tag || d.len > rec.len) {  // the sender hears why before the abort
    in.reject_tag = rec.tag;
    in.reject_len = rec.len;
    storeWord(in.reject, d.tag != rec.tag ? kRejectTag : kRejectLength);
    return d.tag != rec.tag ? tagMismatchStatus(rank_, r.peer, rec.tag, d.tag).withPeer(r.peer)
                            : tooLongStatus(rank_, r.peer, d.len, rec.len).withPeer(r.peer);
  }
  rec.len = d.len;  // what arrives: the receive completes with the sender's length
  char* src = nullptr;
  if (d.has_mem && d.len) {
    CCSCOPE_ASSIGN_OR_RETURN(src, openPeerMemory(r.peer, d.mem));
  }
  CCSCOPE_RETURN_IF_ERROR(cudaErr(
      "cuStreamWaitValue32",
      ops_.stream_wait_value32(rank_stream_, devWord(r.peer, in.ready), r.msg + 1), r.peer));
  if (src)
    CCSCOPE_RETURN_IF_ERROR(cudaErr("cudaMemcpyAsync",
                                    ops_.memcpy_async(rec.buf, src + d.offset, d.len, rank_stream_),
                                    r.peer));
  return cudaErr("cuStreamWriteValue32",
                 ops_.stream_write_value32(rank_stream_, devWord(r.peer, in.done), r.msg + 1),
                 r.peer);
}

core::Result<uint32_t> CudaIpcTransport::batchEvent() {
  if (free_batch_events_.empty()) {
    cudaEvent_t e = nullptr;
    CCSCOPE_RETURN_IF_ERROR(cudaErr("cudaEventCreateWithFlags", ops_.event_create(&e)));
    batch_events_.push_back(e);
    free_batch_events_.push_back(static_cast<uint32_t>(batch_events_.size() - 1));
  }
  const uint32_t ev = free_batch_events_.back();
  free_batch_events_.pop_back();
  return ev;
}

// A batch runs as one: every send's "ready" first, then every receive, then every send's wait
// for its reader. Each wait then points at work its peer enqueued earlier in the same order, so
// ranks that post a step's sends and receives together never wait on each other in a cycle,
// whatever the number or size of the messages.
Status CudaIpcTransport::flushBatch() {
  std::vector<Pending> batch;
  batch.swap(batch_);
  if (batch.empty()) return Status::ok();
  auto live = [&](const Pending& x) {
    return !peers_[x.peer].dead && table_->slot(x.slot).state == ReqState::kPending;
  };
  for (const Pending& x : batch)
    if (x.dir == Dir::kSend && live(x))
      if (Status s = sendFlag(x, false); !s.isOk()) abortPeer(x.peer, s);
  for (int p = 0; p < size_; ++p)
    if (p != rank_ && !peers_[p].deferred.empty()) startDeferred(p, true);
  for (const Pending& x : batch)
    if (x.dir == Dir::kRecv && live(x))
      if (Status s = enqueueRecv(x); !s.isOk()) abortPeer(x.peer, s);
  for (const Pending& x : batch)
    if (x.dir == Dir::kSend && live(x))
      if (Status s = sendFlag(x, true); !s.isOk()) abortPeer(x.peer, s);
  if (Status s = recordFor(batch); !s.isOk()) {
    for (const Pending& x : batch) abortPeer(x.peer, s);
    return s;
  }
  return Status::ok();
}

// The requests finish once an event recorded after their work ran.
Status CudaIpcTransport::recordFor(std::vector<Pending> reqs) {
  CCSCOPE_ASSIGN_OR_RETURN(uint32_t ev, batchEvent());
  if (Status s = cudaErr("cudaEventRecord", ops_.event_record(batch_events_[ev], rank_stream_));
      !s.isOk()) {
    free_batch_events_.push_back(ev);
    return s;
  }
  enqueued_.push_back(Enqueued{ev, std::move(reqs)});
  return Status::ok();
}

// Batches finish in stream order: each request of one whose event ran is done (a request that
// failed meanwhile, with its peer, stays failed).
void CudaIpcTransport::pollBatches() {
  while (!enqueued_.empty()) {
    Enqueued& b = enqueued_.front();
    const cudaError_t e = ops_.event_query(batch_events_[b.event]);
    if (e == cudaErrorNotReady) return;
    const Status s = cudaErr("cudaEventQuery", e);
    for (const Pending& q : b.reqs) {
      RequestRecord& rec = table_->slot(q.slot);
      if (rec.gen != q.gen || rec.state != ReqState::kPending) continue;
      if (!s.isOk()) {
        table_->fail(q.slot, s);
        continue;
      }
      table_->addBytes(q.slot, rec.len);
      table_->complete(q.slot);
    }
    free_batch_events_.push_back(b.event);
    enqueued_.pop_front();
  }
}

}  // namespace ccscope::transports::cuda_ipc
