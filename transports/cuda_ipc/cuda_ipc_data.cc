// The CUDA-IPC transport's data path: posts, announcements, matching, copies and completion.
#include <fmt/format.h>

#include "transports/common/pair_errors.h"
#include "transports/cuda_ipc/cuda_ipc_impl.h"

namespace ccscope::transports::cuda_ipc {

using core::Code;
using core::Layer;
using core::Status;

namespace {

int64_t ownerCode(int peer, bool recv, uint32_t index) {
  return (static_cast<int64_t>(peer) << 16) | (recv ? 1 << 15 : 0) | index;
}

}  // namespace

Status CudaIpcTransport::postControlRecv(int peer, uint32_t index) {
  const size_t off = static_cast<size_t>(ctrlBuf(peer, true, index) - ctrl_mem_.data());
  CCSCOPE_ASSIGN_OR_RETURN(Request q,
                           ctrl_->postRecv(peer, kCtrlTag, ctrl_reg_.region(), off, sizeof(Ctrl)));
  ctrl_owner_[q.slot] = ownerCode(peer, true, index);
  return Status::ok();
}

void CudaIpcTransport::sendControl(int peer, const Ctrl& c) {
  peers_[peer].ctrl_out.push_back(c);
  flushControl(peer);
}

// Queued control messages into free send buffers; a failed post fails the peer.
void CudaIpcTransport::flushControl(int p) {
  Peer& peer = peers_[p];
  for (uint32_t i = 0; i < kCtrlSendsPerPeer && !peer.ctrl_out.empty(); ++i) {
    if (peer.ctrl_sends[i].valid()) continue;
    char* buf = ctrlBuf(p, false, i);
    std::memcpy(buf, &peer.ctrl_out.front(), sizeof(Ctrl));
    auto q = ctrl_->postSend(p, kCtrlTag, ctrl_reg_.region(),
                             static_cast<size_t>(buf - ctrl_mem_.data()), sizeof(Ctrl));
    if (!q) {  // the channel to this peer is gone: nothing queued can leave any more
      peer.ctrl_out.clear();
      failPeer(p, q.status());
      return;
    }
    peer.ctrl_sends[i] = *q;
    ctrl_owner_[q->slot] = ownerCode(p, false, i);
    peer.ctrl_out.pop_front();
  }
}

// What finished on the control channel: arrivals are handled in their order, per peer.
Status CudaIpcTransport::reapControl() {
  Request q;
  while (ctrl_->requests().nextFinished(&q)) {
    const int64_t owner = ctrl_owner_[q.slot];
    if (owner < 0) continue;
    ctrl_owner_[q.slot] = -1;
    const int p = static_cast<int>(owner >> 16);
    const bool recv = (owner & (1 << 15)) != 0;
    const uint32_t index = static_cast<uint32_t>(owner & 0x7fff);
    Status s = ctrl_->requests().release(q);
    if (!recv) peers_[p].ctrl_sends[index] = Request{};
    if (!s.isOk()) {
      failPeer(p, s);
      continue;
    }
    if (!recv || peers_[p].dead) continue;
    Ctrl c;
    std::memcpy(&c, ctrlBuf(p, true, index), sizeof c);
    peers_[p].silent = false;  // it drives progress again
    if (Status r = postControlRecv(p, index); !r.isOk()) failPeer(p, r);
    onControl(p, c);
  }
  return Status::ok();
}

void CudaIpcTransport::onControl(int p, const Ctrl& c) {
  switch (c.kind) {
    case CtrlKind::kAnnounce:
      peers_[p].announces.push_back(c);
      matchPeer(p);
      break;
    case CtrlKind::kDone:
      onDone(p, c);
      break;
    case CtrlKind::kUnmap:
      onUnmap(p, c);
      break;
    case CtrlKind::kUnmapped:
      if (peers_[p].unmaps_unanswered) --peers_[p].unmaps_unanswered;
      break;
    case CtrlKind::kClosed:
      failPeer(p, Status(Code::kPeerClosed, fmt::format("rank {} closed its cuda-ipc transport", p))
                      .withLayer(Layer::kApplication)
                      .withPeer(p));
      break;
    case CtrlKind::kAbort:
      if (stream_path_ && loadWord(outPair(p).reject) != kNoReject) {  // it refused our message
        failPeer(p, rejectStatus(p));
        break;
      }
      failPeer(p, Status(Code::kAborted,
                         fmt::format("rank {} aborted its exchanges with rank {}", p, rank_))
                      .withLayer(Layer::kApplication)
                      .withPeer(p));
      break;
  }
}

// The owner frees an allocation we may map: copies from it finish first, then it is closed.
void CudaIpcTransport::onUnmap(int p, const Ctrl& c) {
  Peer& peer = peers_[p];
  std::array<char, sizeof(cudaIpcMemHandle_t)> key{};
  std::memcpy(key.data(), &c.mem, sizeof c.mem);
  if (auto it = peer.opened.find(key); it != peer.opened.end()) {
    syncCopies(p);
    ops_.ipc_close_mem_handle(it->second);
    peer.opened.erase(it);
  }
  Ctrl reply;
  reply.kind = CtrlKind::kUnmapped;
  sendControl(p, reply);
}

// The receiver's word on our oldest announced send.
void CudaIpcTransport::onDone(int p, const Ctrl& c) {
  Peer& peer = peers_[p];
  if (peer.sends.empty() || c.seq != peer.done_seq) {
    abortPeer(p, Status(Code::kInternal,
                        fmt::format("cuda-ipc: rank {} acknowledged message {} but rank {} "
                                    "expected {}",
                                    p, c.seq, rank_, peer.done_seq))
                     .withLayer(Layer::kApplication)
                     .withPeer(p));
    return;
  }
  ++peer.done_seq;
  const uint32_t slot = peer.sends.front();
  peer.sends.pop_front();
  RequestRecord& rec = table_->slot(slot);
  switch (c.result) {
    case CtrlResult::kCopied:  // its copy ran: the buffer is ours again
    case CtrlResult::kDiscarded:
      table_->addBytes(slot, rec.len);
      table_->complete(slot);
      break;
    case CtrlResult::kTagMismatch:
      table_->fail(slot, tagMismatchStatus(p, rank_, c.tag, rec.tag).withPeer(p));
      break;
    case CtrlResult::kTooLong:
      table_->fail(slot, tooLongStatus(p, rank_, rec.len, c.len).withPeer(p));
      break;
  }
}

core::Result<char*> CudaIpcTransport::openPeerMemory(int p, const cudaIpcMemHandle_t& h) {
  std::array<char, sizeof(cudaIpcMemHandle_t)> key{};
  std::memcpy(key.data(), &h, sizeof h);
  auto& opened = peers_[p].opened;
  if (auto it = opened.find(key); it != opened.end()) return it->second;
  void* ptr = nullptr;
  if (cudaError_t e = ops_.ipc_open_mem_handle(&ptr, h); e != cudaSuccess)
    return cudaErr("cudaIpcOpenMemHandle", e, p)
        .prepend(fmt::format("opening rank {}'s buffer", p));
  opened.emplace(key, static_cast<char*>(ptr));
  return static_cast<char*>(ptr);
}

// One announcement against the oldest receive: copy out of the sender's memory on this peer's
// stream and record our event after it, or say why not. The sender hears of it (kDone) only
// once that event completed (pollPeer): until then it must not touch the buffer.
void CudaIpcTransport::matchOne(int p, uint32_t slot, const Ctrl& a) {
  Peer& peer = peers_[p];
  RequestRecord& rec = table_->slot(slot);
  Copy copy{kNoSlot, kNoEvent, Ctrl{}};
  Ctrl& done = copy.done;
  done.kind = CtrlKind::kDone;
  done.seq = a.seq;
  done.tag = rec.tag;
  done.len = rec.len;
  if (rec.cancelled) {  // a late message for a receive given up: swallowed, never written
    done.result = CtrlResult::kDiscarded;
    table_->complete(slot);
  } else if (a.tag != rec.tag) {
    done.result = CtrlResult::kTagMismatch;
    table_->fail(slot, tagMismatchStatus(rank_, p, rec.tag, a.tag).withPeer(p));
  } else if (a.len > rec.len) {
    done.result = CtrlResult::kTooLong;
    table_->fail(slot, tooLongStatus(rank_, p, a.len, rec.len).withPeer(p));
  } else {
    auto src = openPeerMemory(p, a.mem);
    Status s = src.status();
    const uint32_t ev = peer.free_events.back();
    if (s.isOk() && a.len)
      s = cudaErr("cudaMemcpyAsync",
                  ops_.memcpy_async(rec.buf, *src + a.offset, a.len, peer.stream), p);
    if (s.isOk())
      s = cudaErr("cudaEventRecord", ops_.event_record(peer.events[ev], peer.stream), p);
    if (!s.isOk()) {  // the sender is told, or it would wait for an answer until its deadline
      abortPeer(p, s);
      return;
    }
    peer.free_events.pop_back();
    rec.len = a.len;  // what arrived: the receive completes with the sender's length
    done.result = CtrlResult::kCopied;
    copy.slot = slot;
    copy.event = ev;
  }
  peer.copies.push_back(copy);
}

void CudaIpcTransport::matchPeer(int p) {
  Peer& peer = peers_[p];
  // A match may need an event: with all of them on the stream, the next waits for a copy.
  while (!peer.dead && !peer.recvs.empty() && !peer.announces.empty() &&
         !peer.free_events.empty()) {
    const uint32_t slot = peer.recvs.front();
    const Ctrl a = peer.announces.front();
    RequestRecord& rec = table_->slot(slot);
    peer.recvs.pop_front();
    // A receive given up steps aside for a message that is not its own.
    if (rec.cancelled && a.tag != rec.tag) {
      table_->drop(slot);
      continue;
    }
    peer.announces.pop_front();
    matchOne(p, slot, a);
  }
}

// Answers in message order, each once its copy ran (our own event: the only completion CUDA
// defines for this process).
void CudaIpcTransport::pollPeer(int p) {
  Peer& peer = peers_[p];
  while (!peer.dead && !peer.copies.empty()) {
    const Copy c = peer.copies.front();
    if (c.event != kNoEvent) {
      cudaError_t e = ops_.event_query(peer.events[c.event]);
      if (e == cudaErrorNotReady) break;
      if (e != cudaSuccess) {
        Status s = cudaErr("cudaEventQuery", e, p);
        table_->fail(c.slot, s);
        peer.copies.pop_front();
        abortPeer(p, s);
        return;
      }
      peer.free_events.push_back(c.event);
      table_->addBytes(c.slot, table_->slot(c.slot).len);
      table_->complete(c.slot);
    }
    peer.copies.pop_front();
    sendControl(p, c.done);
  }
}

Status CudaIpcTransport::progress() {
  if (!ctrl_ || closed_) return Status::ok();
  CCSCOPE_RETURN_IF_ERROR(ctrl_->progress());
  CCSCOPE_RETURN_IF_ERROR(reapControl());
  if (stream_path_) {  // what finished first, then who gave up
    pollBatches();
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      flushControl(p);
      startDeferred(p, false);
      pollHostSends(p);
    }
    checkAborts();
    return Status::ok();
  }
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    flushControl(p);  // a dead peer's too: an abort may still be waiting for a buffer
    if (peers_[p].dead) continue;
    matchPeer(p);
    pollPeer(p);
  }
  return Status::ok();
}

core::Result<Request> CudaIpcTransport::doPost(Dir dir, int p, uint32_t tag,
                                               const MemoryRegion& view) {
  if (stream_path_) return streamPost(dir, p, tag, view);
  CCSCOPE_ASSIGN_OR_RETURN(Request q, table_->open(dir, p, tag, view.base(), view.len()));
  Peer& peer = peers_[p];
  if (dir == Dir::kRecv) {
    ++peer.recv_seq;
    peer.recvs.push_back(q.slot);
    matchPeer(p);
    return q;
  }
  const auto* x = static_cast<const ExportedRange*>(view.keys().handle);
  Ctrl a;
  a.kind = CtrlKind::kAnnounce;
  a.tag = tag;
  a.seq = peer.send_seq++;
  a.len = view.len();
  a.offset = x ? static_cast<uint64_t>(view.base() - x->alloc_base) : 0;
  if (x) a.mem = x->handle;
  peer.sends.push_back(q.slot);
  sendControl(p, a);
  return q;
}

// A receive not matched yet stays in the order (matchPeer swallows or skips it); one being
// copied into is waited for, so the buffer is the caller's on return. A send already announced
// may be read by its peer at any time: it cannot be withdrawn, so the peer is aborted.
void CudaIpcTransport::cancelPending(uint32_t slot) {
  RequestRecord& rec = table_->slot(slot);
  Peer& peer = peers_[rec.peer];
  if (stream_path_) {  // enqueued work cannot be withdrawn from a stream
    abortPeer(rec.peer, Status(Code::kAborted,
                               fmt::format("a request with rank {} was cancelled after rank {} "
                                           "enqueued it on its stream",
                                           rec.peer, rank_))
                            .withLayer(Layer::kApplication));
    return;
  }
  if (rec.dir == Dir::kRecv) {
    for (const Copy& c : peer.copies)
      if (c.slot == slot) {
        ops_.stream_synchronize(peer.stream);
        break;
      }
    return;
  }
  abortPeer(rec.peer, Status(Code::kAborted,
                             fmt::format("a send to rank {} was cancelled after rank {} could "
                                         "read it",
                                         rec.peer, rank_))
                          .withLayer(Layer::kApplication));
}

}  // namespace ccscope::transports::cuda_ipc
