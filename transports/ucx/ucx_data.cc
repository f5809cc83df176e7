// The UCX transport's data path: posts, completions, the tag check, control messages, the
// swallowing of late messages for cancelled receives, and peer failure.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "transports/common/pair_errors.h"
#include "transports/ucx/ucx_impl.h"

namespace ccscope::transports::ucx {

using core::Code;
using core::Layer;
using core::Status;

namespace {

uint64_t wireTag(int sender, uint64_t seq, uint32_t tag) {
  return (static_cast<uint64_t>(sender) << kRankShift) | ((seq << kSeqShift) & kSeqMask) | tag;
}

void sentCb(void* req, ucs_status_t status, void* user) {
  auto* r = static_cast<SlotRef*>(user);
  r->t->onSent(r->slot, req, status);
}

void ctrlRecvCb(void* req, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
  static_cast<UcxTransport*>(user)->onControl(req, status, info);
}

void ctrlSentCb(void* req, ucs_status_t /*status*/, void* user) {
  auto* out = static_cast<CtrlOut*>(user);
  out->t->onControlSent();
  delete out;
  ucp_request_free(req);
}

}  // namespace

void recvCb(void* req, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
  auto* r = static_cast<SlotRef*>(user);
  r->t->onReceived(r->slot, req, status, info);
}

Status UcxTransport::peerStatus(int peer, ucs_status_t status) const {
  Code code = status == UCS_ERR_CANCELED ? Code::kAborted : Code::kPeerClosed;
  return Status(code, fmt::format("rank {} exited or its connection failed (ucx: {})", peer,
                                  ucs_status_string(status)))
      .withLayer(Layer::kApplication)
      .withPeer(peer)
      .withNative("ucp", static_cast<long>(status));
}

core::Result<Request> UcxTransport::doPost(Dir dir, int peer, uint32_t tag,
                                           const MemoryRegion& view) {
  Peer& p = peers_[peer];
  if (p.gone) {  // only what it sent before it went can still arrive; other posts fail at once
    ucp_tag_recv_info_t info{};
    const bool queued =
        dir == Dir::kRecv && ucp_tag_probe_nb(worker_, static_cast<uint64_t>(peer) << kRankShift,
                                              kCtrlBit | kRankMask, 0, &info) != nullptr;
    if (!queued) return p.gone_why;
  }
  CCSCOPE_ASSIGN_OR_RETURN(Request q, table_->open(dir, peer, tag, view.base(), view.len()));
  // The slot's last request may still be in UCX (see staleCallback): it is not this one's.
  ucx_req_[q.slot] = nullptr;
  if (dir == Dir::kRecv) {
    if (!p.swallow.empty() || !p.held.empty()) {
      p.held.push_back(q.slot);  // behind a late message that may still be swallowed
      return q;
    }
    if (Status s = postToUcx(peer, q.slot); !s.isOk()) table_->fail(q.slot, s);
    return q;
  }
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.cb.send = sentCb;
  prm.user_data = &refs_[q.slot];
  if (view.keys().handle) {
    prm.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    prm.memh = static_cast<ucp_mem_h>(view.keys().handle);
  }
  ucx_req_[q.slot] = kPosting;
  ucs_status_ptr_t r =
      ucp_tag_send_nbx(p.ep, view.base(), view.len(), wireTag(rank_, p.send_seq++, tag), &prm);
  const bool called_back = ucx_req_[q.slot] != kPosting;
  ucx_req_[q.slot] = nullptr;
  if (r == nullptr) {
    table_->addBytes(q.slot, view.len());
    table_->complete(q.slot);
  } else if (UCS_PTR_IS_ERR(r)) {
    table_->fail(q.slot, peerStatus(peer, UCS_PTR_STATUS(r)));
  } else if (!called_back) {
    ucx_req_[q.slot] = r;
  }
  return q;
}

// The receive matches the next message from `peer` whatever its tag (checked on arrival).
Status UcxTransport::postToUcx(int peer, uint32_t slot) {
  RequestRecord& rec = table_->slot(slot);
  ucp_request_param_t prm{};
  prm.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  prm.cb.recv = recvCb;
  prm.user_data = &refs_[slot];
  expect_seq_[slot] = peers_[peer].recv_seq++;
  ucx_req_[slot] = kPosting;
  ucs_status_ptr_t r =
      ucp_tag_recv_nbx(worker_, rec.buf, rec.len, static_cast<uint64_t>(peer) << kRankShift,
                       kCtrlBit | kRankMask, &prm);
  const bool called_back = ucx_req_[slot] != kPosting;
  ucx_req_[slot] = nullptr;
  if (UCS_PTR_IS_ERR(r)) return peerStatus(peer, UCS_PTR_STATUS(r));
  if (!called_back) ucx_req_[slot] = r;
  return Status::ok();
}

// A slot is reused as soon as its failed request is released, while UCX may still hold that
// request (a send to a failed peer, a receive being cancelled): UCX's late callback for it (a
// forced close purges them) must not finish the slot's next request.
bool UcxTransport::staleCallback(uint32_t slot, void* req) {
  if (ucx_req_[slot] == req || ucx_req_[slot] == kPosting) return false;
  ucp_request_free(req);
  return true;
}

void UcxTransport::onSent(uint32_t slot, void* req, ucs_status_t status) {
  if (staleCallback(slot, req)) return;
  ucx_req_[slot] = nullptr;
  ucp_request_free(req);
  RequestRecord& rec = table_->slot(slot);
  if (rec.state != ReqState::kPending) return;  // failed with its peer already
  if (status == UCS_OK) {
    table_->addBytes(slot, rec.len);
    table_->complete(slot);
  } else {
    table_->fail(slot, peerStatus(rec.peer, status));
  }
}

void UcxTransport::onReceived(uint32_t slot, void* req, ucs_status_t status,
                              const ucp_tag_recv_info_t* tag_info) {
  // The info lives in the request: copied before the request goes back to UCX.
  const ucp_tag_recv_info_t arrived = tag_info ? *tag_info : ucp_tag_recv_info_t{};
  const ucp_tag_recv_info_t* info = &arrived;
  if (staleCallback(slot, req)) return;
  ucx_req_[slot] = nullptr;
  ucx_status_[slot] = status;
  ucp_request_free(req);
  RequestRecord& rec = table_->slot(slot);
  // Taken back (cancelPending or a failed peer decides what follows), or given up by its owner.
  if (status == UCS_ERR_CANCELED || rec.cancelled) return;
  if (rec.state != ReqState::kPending) return;
  const int peer = rec.peer;
  if (status == UCS_ERR_MESSAGE_TRUNCATED) {
    Status s = tooLongStatus(rank_, peer, 0, rec.len).withPeer(peer);
    table_->fail(slot, s);
    sendControl(peer, Ctrl{CtrlKind::kTooLong, static_cast<uint32_t>(rec.len), 0, 0});
    failPeer(peer, s);
    return;
  }
  if (status != UCS_OK) {
    table_->fail(slot, peerStatus(peer, status));
    return;
  }
  const uint32_t got = static_cast<uint32_t>(info->sender_tag);
  const uint64_t seq = (info->sender_tag & kSeqMask) >> kSeqShift;
  const uint64_t want = (expect_seq_[slot] << kSeqShift & kSeqMask) >> kSeqShift;
  if (got != rec.tag || seq != want) {
    Status s = got != rec.tag
                   ? tagMismatchStatus(rank_, peer, rec.tag, got).withPeer(peer)
                   : Status(Code::kInternal,
                            fmt::format("rank {} expected message {} (mod 2048) from rank {} but "
                                        "got {}: the pair lost its order",
                                        rank_, want, peer, seq))
                         .withLayer(Layer::kLibrary)
                         .withPeer(peer);
    table_->fail(slot, s);
    sendControl(peer, Ctrl{CtrlKind::kMismatch, rec.tag, got, 0});
    failPeer(peer, s);
    return;
  }
  table_->addBytes(slot, info->length);
  rec.len = info->length;
  table_->complete(slot);
}

void UcxTransport::onPeerError(int peer, ucs_status_t status) {
  Peer& p = peers_[peer];
  if (p.gone || p.dead) return;
  p.gone = true;
  p.gone_why = peerStatus(peer, status);
  // A receive still posted found nothing the peer sent: none will come now.
  failPending(peer, p.gone_why, false);
}

// Fails the peer's pending requests; their UCX receives are taken back (UCX gives the requests
// back through their callbacks, later: this runs inside callbacks too, where UCX may not be
// progressed again). Sends UCX holds finish or fail on their own; their records failed here.
void UcxTransport::failPending(int peer, const Status& why, bool recvs_only) {
  Peer& p = peers_[peer];
  for (uint32_t slot = 0; slot < ucx_req_.size(); ++slot) {
    RequestRecord& rec = table_->slot(slot);
    if (rec.state != ReqState::kPending || rec.peer != peer) continue;
    if (recvs_only && rec.dir != Dir::kRecv) continue;
    if (rec.dir == Dir::kRecv && ucx_req_[slot]) ucp_request_cancel(worker_, ucx_req_[slot]);
    if (rec.state == ReqState::kPending) table_->fail(slot, why);
  }
  p.held.clear();
  p.swallow.clear();
}

// One wildcard control receive at a time; control messages are rare (aborts and mismatches).
void UcxTransport::postControlRecv() {
  ucp_request_param_t prm{};
  prm.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  prm.cb.recv = ctrlRecvCb;
  prm.user_data = this;
  ucs_status_ptr_t r =
      ucp_tag_recv_nbx(worker_, &ctrl_in_, sizeof ctrl_in_, kCtrlBit, kCtrlBit, &prm);
  ctrl_req_ = UCS_PTR_IS_PTR(r) ? r : nullptr;
}

void UcxTransport::onControl(void* req, ucs_status_t status, const ucp_tag_recv_info_t* info) {
  const uint64_t sender_tag = info ? info->sender_tag : 0;  // in the request: read before free
  ucp_request_free(req);
  ctrl_req_ = nullptr;
  if (status != UCS_OK || closed_) return;
  const int peer = static_cast<int>((sender_tag & kRankMask) >> kRankShift);
  const Ctrl c = ctrl_in_;
  postControlRecv();
  if (peer < 0 || peer >= size_ || peer == rank_) return;
  switch (c.kind) {
    case CtrlKind::kAbort:
      failPeer(peer, abortedBy(peer));
      break;
    case CtrlKind::kMismatch:
      failPeer(peer, tagMismatchStatus(peer, rank_, c.expected, c.got).withPeer(peer));
      break;
    case CtrlKind::kTooLong:
      failPeer(peer, tooLongStatus(peer, rank_, 0, c.expected).withPeer(peer));
      break;
    case CtrlKind::kHello:
      ++hellos_;
      break;
  }
}

void UcxTransport::sendControl(int peer, const Ctrl& c) {
  Peer& p = peers_[peer];
  if (!p.ctrl_ep || closed_) return;
  auto* out = new CtrlOut{this, c};
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.cb.send = ctrlSentCb;
  prm.user_data = out;
  ++ctrl_inflight_;
  ucs_status_ptr_t r =
      ucp_tag_send_nbx(p.ctrl_ep, &out->c, sizeof out->c,
                       kCtrlBit | static_cast<uint64_t>(rank_) << kRankShift, &prm);
  if (!UCS_PTR_IS_PTR(r)) {  // done at once, or failed: nothing to wait for
    --ctrl_inflight_;
    delete out;
  }
}

// Every pending request with `peer` fails; UCX's receives from it are cancelled (their slots
// are failed here, the cancellations only free UCX's requests).
void UcxTransport::failPeer(int peer, const Status& why) {
  Peer& p = peers_[peer];
  if (p.dead) return;
  p.dead = true;
  failPending(peer, why, true);
  table_->failPeer(peer, why);
  // Not here: this may run inside a callback, and a notice to the peer may still be queued.
  p.close_at_ns = core::nowNs() + 100'000'000;
}

// A forced close ends every transfer with the peer, a rendezvous half-way included: nothing
// lands in a buffer of ours after its request failed. UCX finishes the close in progress().
// Without peer error handling a forced close is undefined (ucp_ep_close_nbx): the endpoint then
// stays until the worker goes, and a transfer under way may still finish into its buffer.
void UcxTransport::closeEndpoint(int peer) {
  Peer& p = peers_[peer];
  if (!opts_.ucx_peer_errors) return;
  if (p.ep) p.closing[0] = forceClose(p.ep);
  if (p.ctrl_ep) p.closing[1] = forceClose(p.ctrl_ep);
}

// Starts a forced close; the request to wait for, or null when it finished at once.
void* UcxTransport::forceClose(ucp_ep_h& ep) {
  ucp_request_param_t cp{};
  cp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  cp.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &cp);
  ep = nullptr;
  return UCS_PTR_IS_PTR(r) ? r : nullptr;
}

// The peer is told (the notice gets a moment to leave before the endpoint closes); it also
// sees the endpoint close.
void UcxTransport::abortPeer(int peer, const Status& why) {
  if (peer < 0 || peer >= size_ || peer == rank_ || peers_.empty() || peers_[peer].dead) return;
  // Our side fails first: a peer told at once may close its endpoints while the notice leaves,
  // and our requests then fail for the abort, not for the closed endpoint.
  failPeer(peer, why);
  if (auto it = boards_.find(peer); it != boards_.end()) it->second.mark(rank_);
  sendControl(peer, Ctrl{CtrlKind::kAbort, 0, 0, 0});
  const core::Deadline until = core::Deadline::afterSeconds(0.1);
  while (ctrl_inflight_ > 0 && !until.expired()) ucp_worker_progress(worker_);
  closeEndpoint(peer);
}

Status UcxTransport::abortedBy(int peer) const {
  return Status(Code::kAborted,
                fmt::format("rank {} aborted its exchanges with rank {}", peer, rank_))
      .withLayer(Layer::kApplication)
      .withPeer(peer);
}

// Aborts marked on our board by peers on this host, whose notices UCX may still hold.
void UcxTransport::readBoard() {
  for (int peer : board_.newMarks())
    if (peer != rank_ && peer < size_) failPeer(peer, abortedBy(peer));
}

Status UcxTransport::progress() {
  if (!worker_ || closed_) return Status::ok();
  while (ucp_worker_progress(worker_) != 0) {
  }
  readBoard();
  for (int peer = 0; peer < size_; ++peer) {
    Peer& p = peers_[peer];
    if (p.dead && p.ep && (ctrl_inflight_ == 0 || core::nowNs() > p.close_at_ns))
      closeEndpoint(peer);
    for (void*& c : p.closing) {
      if (c && ucp_request_check_status(c) != UCS_INPROGRESS) {
        ucp_request_free(c);
        c = nullptr;
      }
    }
  }
  for (int peer = 0; peer < size_; ++peer)
    if (!peers_[peer].swallow.empty()) resolveSwallow(peer);
  return Status::ok();
}

}  // namespace ccscope::transports::ucx
