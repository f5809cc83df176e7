// The verbs transport's eager ring and control path: ring slots and their receive work
// requests, staged sends under credits, completions, control messages, failing a peer.
#include <fmt/format.h>

#include <chrono>
#include <cstring>

#include "transports/verbs/verbs_errors.h"
#include "transports/verbs/verbs_impl.h"

namespace ccscope::transports::verbs {

using core::Code;
using core::Layer;
using core::Status;

namespace {

constexpr double kNoticeSeconds = 0.05;  // how long a refusal or abort may take to leave

Status desync(int peer, const std::string& what) {
  return Status(Code::kInternal, fmt::format("verbs protocol error from rank {}: {}", peer, what))
      .withLayer(Layer::kRdma)
      .withPeer(peer);
}

}  // namespace

char* VerbsTransport::recvSlot(int peer, uint32_t i) {
  return ring_mem_.data() + (static_cast<size_t>(peer) * 2 * kRingSlots + i) * kSlotBytes;
}

char* VerbsTransport::stageSlot(int peer, uint32_t i) {
  return ring_mem_.data() +
         (static_cast<size_t>(peer) * 2 * kRingSlots + kRingSlots + i) * kSlotBytes;
}

Status VerbsTransport::postRing(int peer, uint32_t i) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(recvSlot(peer, i)), static_cast<uint32_t>(kSlotBytes),
              ring_mr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = wrId(WrKind::kRecv, peer, i);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (int err = ops_.post_recv(peers_[peer].qp, &wr, &bad); err != 0)
    return callError("ibv_post_recv", err, dev_.port.name, peer);
  return Status::ok();
}

void VerbsTransport::repost(int peer, uint32_t ring, bool credit_msg) {
  if (peers_[peer].dead) return;
  if (Status s = postRing(peer, ring); !s.isOk()) return failPeer(peer, s);
  ++peers_[peer].owed;
  if (credit_msg) ++peers_[peer].owed_ctrl;
}

// One header (and payload) into a staging slot, sent with SEND. Data keeps kCtrlReserve
// credits back for control messages; false when it must wait.
bool VerbsTransport::sendStaged(int p, const WireHeader& hdr, const char* payload, size_t len,
                                bool data) {
  Peer& peer = peers_[p];
  if (peer.dead || peer.free_stage.empty() || peer.credits <= (data ? kCtrlReserve : 0))
    return false;
  const uint32_t i = peer.free_stage.back();
  WireHeader h = hdr;
  h.credits = peer.owed;  // piggybacked: every header returns what is owed
  char* buf = stageSlot(p, i);
  std::memcpy(buf, &h, sizeof h);
  if (len) std::memcpy(buf + sizeof h, payload, len);
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(sizeof h + len),
              ring_mr_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wrId(WrKind::kStage, p, i);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (int err = ops_.post_send(peer.qp, &wr, &bad); err != 0) {
    failPeer(p, callError("ibv_post_send", err, dev_.port.name, p));
    return false;
  }
  peer.free_stage.pop_back();
  --peer.credits;
  peer.owed = peer.owed_ctrl = 0;
  return true;
}

void VerbsTransport::sendControl(int p, WireHeader h) {
  peers_[p].ctrl_out.push_back(h);
  flushControl(p);
}

void VerbsTransport::flushControl(int p) {
  Peer& peer = peers_[p];
  while (!peer.dead && !peer.ctrl_out.empty()) {
    const WireHeader& h = peer.ctrl_out.front();
    // A credit return with nothing left to return (a header since carried it) is dropped.
    if (h.kind == WireKind::kCredit && peer.owed == 0) {
      peer.ctrl_out.pop_front();
      continue;
    }
    if (!sendStaged(p, h, nullptr, 0, /*data=*/false)) return;
    peer.ctrl_out.pop_front();
  }
}

// Credits freed by credit messages alone are returned only in a batch, so two idle ranks do
// not bounce credit messages forever.
void VerbsTransport::returnCredits(int p, bool idle) {
  Peer& peer = peers_[p];
  const uint32_t data_owed = peer.owed - peer.owed_ctrl;
  if (data_owed >= kCreditBatch || peer.owed_ctrl >= kCreditBatch || (idle && data_owed > 0)) {
    WireHeader h;
    h.kind = WireKind::kCredit;
    sendControl(p, h);
  }
}

int VerbsTransport::drainCq() {
  int total = 0;
  for (;;) {
    const int n = ops_.poll_cq(cq_, static_cast<int>(wcs_.size()), wcs_.data());
    if (n <= 0) break;
    for (int i = 0; i < n; ++i) onCompletion(wcs_[i]);
    total += n;
  }
  return total;
}

void VerbsTransport::onCompletion(const ibv_wc& wc) {
  const int p = wrPeer(wc.wr_id);
  const uint32_t index = wrIndex(wc.wr_id);
  if (p < 0 || p >= size_ || p == rank_) return;
  Peer& peer = peers_[p];
  if (wrKind(wc.wr_id) == WrKind::kStage) peer.free_stage.push_back(index);
  if (wc.status != IBV_WC_SUCCESS) {
    // Flushes after the QP went to ERR are the echo of a failure already reported.
    if (!peer.dead) failPeer(p, wcError(wc.status, wc.vendor_err, p, dev_.port.name));
    return;
  }
  switch (wrKind(wc.wr_id)) {
    case WrKind::kRecv:
      if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM)
        onWriteArrived(p, index, wc);
      else
        onRing(p, index, wc);
      break;
    case WrKind::kWrite: {
      RequestRecord& rec = table_->slot(index);
      if (rec.state != ReqState::kPending) break;
      table_->addBytes(index, rec.len);
      table_->complete(index);
      break;
    }
    case WrKind::kStage:
      flushControl(p);
      issueSends(p);
      break;
  }
}

void VerbsTransport::onRing(int p, uint32_t ring, const ibv_wc& wc) {
  WireHeader h;
  if (wc.byte_len < sizeof h)
    return failPeer(p, desync(p, "a ring message shorter than its header"));
  std::memcpy(&h, recvSlot(p, ring), sizeof h);
  if (h.magic != kWireMagic) return failPeer(p, desync(p, "a ring message without the magic"));
  peers_[p].credits += h.credits;
  onHeader(p, ring, h);
  if (peers_[p].dead) return;
  flushControl(p);
  issueSends(p);
}

void VerbsTransport::onHeader(int p, uint32_t ring, const WireHeader& h) {
  Peer& peer = peers_[p];
  switch (h.kind) {
    case WireKind::kEager:
    case WireKind::kRts:
      if (h.seq != peer.recv_seq)
        return failPeer(
            p, desync(p, fmt::format("message {} arrived, {} expected", h.seq, peer.recv_seq)));
      ++peer.recv_seq;
      peer.arrivals.push_back({h, ring});
      matchPeer(p);
      advertiseReady(p);
      return;
    case WireKind::kAdvert:
      peer.adverts.push_back(h);
      return repost(p, ring, false);
    case WireKind::kNack:
      repost(p, ring, false);
      return onNack(p, h);
    case WireKind::kCredit:
      return repost(p, ring, true);
    case WireKind::kAbort:
      return failPeer(p, Status(Code::kAborted,
                                fmt::format("rank {} aborted its exchanges with rank {}", p, rank_))
                             .withLayer(Layer::kApplication)
                             .withPeer(p));
  }
  failPeer(p, desync(p, fmt::format("unknown message kind {}", static_cast<int>(h.kind))));
}

// The receiver's word on one of our messages: `tag` is its receive's tag, `addr` ours.
void VerbsTransport::onNack(int p, const WireHeader& h) {
  Peer& peer = peers_[p];
  switch (h.why) {
    case NackWhy::kDiscarded:
      if (!peer.sends.empty() && peer.head_rts_sent && peer.head_seq == h.seq) {
        const uint32_t slot = peer.sends.front();
        peer.sends.pop_front();
        peer.head_rts_sent = false;
        table_->addBytes(slot, table_->slot(slot).len);
        table_->complete(slot);
      }
      return;
    case NackWhy::kTagMismatch:
      return failPeer(p, tagMismatch(p, rank_, h.tag, static_cast<uint32_t>(h.addr)).withPeer(p));
    case NackWhy::kTooLong:
      return failPeer(p, tooLong(p, rank_, h.addr, h.len).withPeer(p));
    case NackWhy::kNone:
      break;
  }
  failPeer(p, desync(p, "a refusal without a reason"));
}

void VerbsTransport::failPeer(int p, const Status& why) {
  Peer& peer = peers_[p];
  if (peer.dead) return;
  peer.dead = true;
  // ERR stops the adapter writing into our buffers: nothing lands after the caller gets them.
  if (peer.sm) peer.sm->toError().ignore();
  table_->failPeer(p, why);
  peer.sends.clear();
  peer.recvs.clear();
  peer.arrivals.clear();
  peer.awaiting.clear();
  peer.adverts.clear();
  peer.ctrl_out.clear();
}

void VerbsTransport::failPeerAfterNotice(int p, const Status& why) {
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(kNoticeSeconds);
  while (!peers_[p].dead && peers_[p].free_stage.size() < kRingSlots &&
         std::chrono::steady_clock::now() < until)
    drainCq();
  failPeer(p, why);
}

void VerbsTransport::abortPeer(int p, const Status& why) {
  if (!connected() || p < 0 || p >= size_ || p == rank_ || peers_[p].dead) return;
  WireHeader h;
  h.kind = WireKind::kAbort;
  sendControl(p, h);
  failPeerAfterNotice(
      p, Status(Code::kAborted, why.message()).withLayer(Layer::kApplication).withPeer(p));
}

}  // namespace ccscope::transports::verbs
