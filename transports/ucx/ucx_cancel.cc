// The UCX transport's cancellation: receives given up, the late messages they swallow, and the
// receives held behind them.
#include <fmt/format.h>

#include <algorithm>

#include "transports/ucx/ucx_impl.h"

namespace ccscope::transports::ucx {

using core::Code;
using core::Layer;
using core::Status;

namespace {

void discardCb(void* req, ucs_status_t /*status*/, const ucp_tag_recv_info_t* /*info*/,
               void* /*user*/) {
  ucp_request_free(req);
}

}  // namespace

void UcxTransport::cancelInUcx(uint32_t slot) {
  if (!ucx_req_[slot]) return;
  ucp_request_cancel(worker_, ucx_req_[slot]);
  while (ucx_req_[slot]) ucp_worker_progress(worker_);
}

// The next message from `peer` after a receive was given up: swallowed when it carries the
// given-up tag, else it goes to the first held receive (the given-up one steps aside).
void UcxTransport::resolveSwallow(int peer) {
  Peer& p = peers_[peer];
  ucp_tag_recv_info_t info{};
  ucp_tag_message_h msg = ucp_tag_probe_nb(worker_, static_cast<uint64_t>(peer) << kRankShift,
                                           kCtrlBit | kRankMask, 1, &info);
  if (!msg) return;
  const uint32_t given_up = p.swallow.front();
  p.swallow.pop_front();
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  if (static_cast<uint32_t>(info.sender_tag) == given_up || p.held.empty()) {
    ++p.recv_seq;
    p.scratch.resize(std::max<size_t>(p.scratch.size(), info.length));
    prm.cb.recv = discardCb;
    ucp_tag_msg_recv_nbx(worker_, p.scratch.data(), info.length, msg, &prm);
  } else {
    const uint32_t slot = p.held.front();
    p.held.pop_front();
    RequestRecord& rec = table_->slot(slot);
    expect_seq_[slot] = p.recv_seq++;
    prm.op_attr_mask |= UCP_OP_ATTR_FIELD_USER_DATA;
    prm.cb.recv = recvCb;
    prm.user_data = &refs_[slot];
    ucx_req_[slot] = kPosting;
    ucs_status_ptr_t r = ucp_tag_msg_recv_nbx(worker_, rec.buf, rec.len, msg, &prm);
    const bool called_back = ucx_req_[slot] != kPosting;
    ucx_req_[slot] = nullptr;
    if (UCS_PTR_IS_PTR(r) && !called_back) ucx_req_[slot] = r;
  }
  if (p.swallow.empty()) releaseHeld(peer);
}

void UcxTransport::releaseHeld(int peer) {
  Peer& p = peers_[peer];
  while (!p.held.empty() && p.swallow.empty()) {
    const uint32_t slot = p.held.front();
    p.held.pop_front();
    if (Status s = postToUcx(peer, slot); !s.isOk()) table_->fail(slot, s);
  }
}

// A receive no message matched yet is taken back from UCX and leaves its tag to swallow the
// next message (the receives posted after it, unmatched too, wait behind it); one already
// matched is waited for, so nothing is written after cancel returns. A send UCX may have
// started cannot be withdrawn: the peer is aborted.
void UcxTransport::cancelPending(uint32_t slot) {
  RequestRecord& rec = table_->slot(slot);
  Peer& p = peers_[rec.peer];
  if (rec.dir == Dir::kSend) {
    if (!ucx_req_[slot]) return;
    abortPeer(rec.peer,
              Status(Code::kAborted,
                     fmt::format("a send to rank {} was cancelled after UCX took it", rec.peer))
                  .withLayer(Layer::kApplication));
    return;
  }
  for (auto it = p.held.begin(); it != p.held.end(); ++it)
    if (*it == slot) {
      p.held.erase(it);
      p.swallow.push_back(rec.tag);
      table_->drop(slot);
      return;
    }
  if (!ucx_req_[slot]) return;
  cancelInUcx(slot);
  if (ucx_status_[slot] != UCS_ERR_CANCELED) {  // matched already: its message is consumed
    table_->complete(slot);
    return;
  }
  // Unmatched: so are the receives posted after it; numbering restarts from its message.
  p.recv_seq = expect_seq_[slot];
  p.swallow.push_back(rec.tag);
  table_->drop(slot);
  // Later receives from this peer are unmatched too (messages match in order): they wait, in
  // the order they were posted.
  std::vector<uint32_t> later;
  for (uint32_t s = 0; s < ucx_req_.size(); ++s) {
    RequestRecord& o = table_->slot(s);
    if (!ucx_req_[s] || o.peer != rec.peer || o.dir != Dir::kRecv) continue;
    cancelInUcx(s);
    if (ucx_status_[s] == UCS_ERR_CANCELED) later.push_back(s);
  }
  std::sort(later.begin(), later.end(),
            [&](uint32_t a, uint32_t b) { return table_->slot(a).seq < table_->slot(b).seq; });
  p.held.insert(p.held.end(), later.begin(), later.end());
}

}  // namespace ccscope::transports::ucx
