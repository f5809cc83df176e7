// The verbs transport's data path: posting, eager and rendezvous sends, matching arrivals to
// receives in order with the tag and length checks, adverts, progress and cancellation.
#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "transports/verbs/verbs_errors.h"
#include "transports/verbs/verbs_impl.h"

namespace ccscope::transports::verbs {

using core::Code;
using core::Layer;
using core::Status;

core::Result<Request> VerbsTransport::doPost(Dir dir, int p, uint32_t tag,
                                             const MemoryRegion& view) {
  if (closed_) return Status(Code::kAborted, "verbs transport closed").withLayer(Layer::kRdma);
  CCSCOPE_ASSIGN_OR_RETURN(Request q, table_->open(dir, p, tag, view.base(), view.len()));
  lkey_of_[q.slot] = view.keys().lkey;
  rkey_of_[q.slot] = view.keys().rkey;
  advertised_[q.slot] = 0;
  Peer& peer = peers_[p];
  if (dir == Dir::kSend) {
    peer.sends.push_back(q.slot);
    issueSends(p);
  } else {
    peer.recvs.push_back(q.slot);
    matchPeer(p);
    advertiseReady(p);
  }
  return q;
}

bool VerbsTransport::issueEager(int p, uint32_t slot) {
  Peer& peer = peers_[p];
  RequestRecord& rec = table_->slot(slot);
  WireHeader h;
  h.kind = WireKind::kEager;
  h.tag = rec.tag;
  h.seq = peer.send_seq;
  h.len = rec.len;
  if (!sendStaged(p, h, rec.buf, rec.len, /*data=*/true)) return false;
  // Adverts for messages up to this one are stale: an eager message needs none.
  while (!peer.adverts.empty() && peer.adverts.front().seq <= peer.send_seq)
    peer.adverts.pop_front();
  ++peer.send_seq;
  // The bytes were copied into the staging slot: the buffer is the caller's again.
  table_->addBytes(slot, rec.len);
  table_->complete(slot);
  return true;
}

// Announce (RTS, in order with eager messages), then wait for the receiver's advert for this
// message number and write straight into its buffer, the immediate naming the message.
bool VerbsTransport::issueRendezvous(int p, uint32_t slot) {
  Peer& peer = peers_[p];
  RequestRecord& rec = table_->slot(slot);
  if (!peer.head_rts_sent) {
    WireHeader h;
    h.kind = WireKind::kRts;
    h.tag = rec.tag;
    h.seq = peer.send_seq;
    h.len = rec.len;
    if (!sendStaged(p, h, nullptr, 0, /*data=*/true)) return false;
    peer.head_rts_sent = true;
    peer.head_seq = seq_of_[slot] = peer.send_seq++;
  }
  while (!peer.adverts.empty() && peer.adverts.front().seq < peer.head_seq)
    peer.adverts.pop_front();
  if (peer.adverts.empty() || peer.adverts.front().seq != peer.head_seq) return false;
  const WireHeader ad = peer.adverts.front();
  if (ad.tag != rec.tag) {
    failPeerAfterNotice(p, tagMismatch(p, rank_, ad.tag, rec.tag).withPeer(p));
    return false;
  }
  if (rec.len > ad.len) {
    failPeerAfterNotice(p, tooLong(p, rank_, rec.len, ad.len).withPeer(p));
    return false;
  }
  if (peer.credits <= kCtrlReserve) return false;
  ibv_sge sge{reinterpret_cast<uintptr_t>(rec.buf), static_cast<uint32_t>(rec.len), lkey_of_[slot]};
  ibv_send_wr wr{};
  wr.wr_id = wrId(WrKind::kWrite, p, slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(static_cast<uint32_t>(peer.head_seq));
  wr.wr.rdma.remote_addr = ad.addr;
  wr.wr.rdma.rkey = ad.rkey;
  ibv_send_wr* bad = nullptr;
  if (int err = ops_.post_send(peer.qp, &wr, &bad); err != 0) {
    failPeer(p, callError("ibv_post_send(RDMA_WRITE_WITH_IMM)", err, dev_.port.name, p));
    return false;
  }
  --peer.credits;  // the write with immediate consumes one of the peer's ring receives
  peer.adverts.pop_front();
  return true;
}

void VerbsTransport::issueSends(int p) {
  Peer& peer = peers_[p];
  while (!peer.dead && !peer.sends.empty()) {
    const uint32_t slot = peer.sends.front();
    const bool eager = table_->slot(slot).len <= kEagerMaxBytes;
    if (!(eager ? issueEager(p, slot) : issueRendezvous(p, slot))) return;
    if (peer.dead) return;
    peer.sends.pop_front();
    peer.head_rts_sent = false;
  }
}

void VerbsTransport::advertise(int p, uint32_t slot, uint64_t seq) {
  const RequestRecord& rec = table_->slot(slot);
  WireHeader h;
  h.kind = WireKind::kAdvert;
  h.tag = rec.tag;
  h.seq = seq;
  h.len = rec.len;
  h.addr = reinterpret_cast<uintptr_t>(rec.buf);
  h.rkey = rkey_of_[slot];
  advertised_[slot] = 1;
  seq_of_[slot] = seq;
  sendControl(p, h);
}

// Large receives advertise as soon as the message they will match is certain: while no
// cancelled receive (which may step aside) is queued ahead of them.
void VerbsTransport::advertiseReady(int p) {
  Peer& peer = peers_[p];
  const uint64_t base = peer.recv_seq - peer.arrivals.size();
  for (size_t i = 0; i < peer.recvs.size() && !peer.dead; ++i) {
    const uint32_t slot = peer.recvs[i];
    const RequestRecord& rec = table_->slot(slot);
    if (rec.cancelled) return;
    if (!advertised_[slot] && rec.len > kEagerMaxBytes) advertise(p, slot, base + i);
  }
}

void VerbsTransport::matchPeer(int p) {
  Peer& peer = peers_[p];
  while (!peer.dead && !peer.recvs.empty() && !peer.arrivals.empty()) {
    const uint32_t slot = peer.recvs.front();
    const Arrival a = peer.arrivals.front();
    peer.recvs.pop_front();
    // A receive given up steps aside for a message that is not its own.
    if (table_->slot(slot).cancelled && a.h.tag != table_->slot(slot).tag) {
      table_->drop(slot);
      continue;
    }
    peer.arrivals.pop_front();
    matchOne(p, slot, a);
  }
}

void VerbsTransport::matchOne(int p, uint32_t slot, const Arrival& a) {
  RequestRecord& rec = table_->slot(slot);
  const bool rts = a.h.kind == WireKind::kRts;
  WireHeader nack;
  nack.kind = WireKind::kNack;
  nack.seq = a.h.seq;
  nack.tag = rec.tag;
  nack.addr = a.h.tag;
  nack.len = rec.len;
  if (rec.cancelled) {  // a late message for a receive given up: swallowed, never written
    repost(p, a.ring, false);
    if (rts) nack.why = NackWhy::kDiscarded, sendControl(p, nack);
    table_->complete(slot);
    return;
  }
  if (a.h.tag != rec.tag || a.h.len > rec.len) {
    const bool tag = a.h.tag != rec.tag;
    nack.why = tag ? NackWhy::kTagMismatch : NackWhy::kTooLong;
    if (!tag) nack.addr = a.h.len;
    repost(p, a.ring, false);
    sendControl(p, nack);
    failPeerAfterNotice(
        p, (tag ? tagMismatch(rank_, p, rec.tag, a.h.tag) : tooLong(rank_, p, a.h.len, rec.len))
               .withPeer(p));
    return;
  }
  if (rts) {
    if (!advertised_[slot]) advertise(p, slot, a.h.seq);
    seq_of_[slot] = a.h.seq;
    peers_[p].awaiting.push_back(slot);
    repost(p, a.ring, false);
    return;
  }
  if (a.h.len) std::memcpy(rec.buf, recvSlot(p, a.ring) + sizeof(WireHeader), a.h.len);
  rec.len = a.h.len;  // what arrived: the receive completes with the sender's length
  repost(p, a.ring, false);
  table_->addBytes(slot, rec.len);
  table_->complete(slot);
}

void VerbsTransport::onWriteArrived(int p, uint32_t ring, const ibv_wc& wc) {
  Peer& peer = peers_[p];
  repost(p, ring, false);
  const uint32_t imm = ntohl(wc.imm_data);
  if (peer.awaiting.empty() || static_cast<uint32_t>(seq_of_[peer.awaiting.front()]) != imm)
    return failPeer(p, Status(Code::kInternal,
                              fmt::format("verbs protocol error from rank {}: a write for message "
                                          "{} that no matched receive waits for",
                                          p, imm))
                           .withLayer(Layer::kRdma)
                           .withPeer(p));
  const uint32_t slot = peer.awaiting.front();
  peer.awaiting.pop_front();
  RequestRecord& rec = table_->slot(slot);
  rec.len = wc.byte_len;
  table_->addBytes(slot, rec.len);
  table_->complete(slot);
}

Status VerbsTransport::progress() {
  if (!connected() || closed_) return Status::ok();
  if (async_pending_.load()) drainAsync();
  drainCq();
  for (int p = 0; p < size_; ++p) {
    if (p == rank_ || peers_[p].dead) continue;
    flushControl(p);
    issueSends(p);
    returnCredits(p, /*idle=*/false);
  }
  return Status::ok();
}

// A send not yet announced is withdrawn; one announced or being written cannot be taken back.
// A receive that advertised its buffer (or has one advertised behind it) may be written by the
// peer at any moment: only moving the QP to ERR (abortPeer) keeps it untouched. Any other
// unmatched receive stays in the order as a sink (matchPeer).
void VerbsTransport::cancelPending(uint32_t slot) {
  const RequestRecord& rec = table_->slot(slot);
  const int p = rec.peer;
  Peer& peer = peers_[p];
  if (peer.dead) return;
  if (rec.dir == Dir::kSend) {
    auto it = std::find(peer.sends.begin(), peer.sends.end(), slot);
    if (it != peer.sends.end() && !(it == peer.sends.begin() && peer.head_rts_sent)) {
      peer.sends.erase(it);
      table_->drop(slot);
      return;
    }
    return abortPeer(
        p, Status(Code::kAborted,
                  fmt::format("rank {} cancelled a send to rank {} that had started", rank_, p)));
  }
  auto it = std::find(peer.recvs.begin(), peer.recvs.end(), slot);
  const bool exposed = it == peer.recvs.end() || std::any_of(it, peer.recvs.end(), [&](uint32_t s) {
                         return advertised_[s] != 0;
                       });
  if (exposed)
    abortPeer(p, Status(Code::kAborted,
                        fmt::format("rank {} cancelled a receive from rank {} whose buffer was "
                                    "advertised for RDMA writes",
                                    rank_, p)));
}

}  // namespace ccscope::transports::verbs
