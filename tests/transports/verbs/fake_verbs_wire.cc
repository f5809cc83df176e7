// The fake fabric's wire: QP transitions, posting, moving bytes and completions.
#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tests/transports/verbs/fake_verbs.h"

namespace ccscope::transports::verbs::fake {

namespace {

bool legal(ibv_qp_state from, ibv_qp_state to, int mask) {
  if (to == IBV_QPS_ERR || to == IBV_QPS_RESET) return true;
  const int init = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  const int rtr = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  const int rts = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                  IBV_QP_MAX_QP_RD_ATOMIC;
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) return (mask & init) == init;
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) return (mask & rtr) == rtr;
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) return (mask & rts) == rts;
  return false;
}

ibv_wc wcFor(uint64_t wr_id, int status, ibv_wc_opcode op, uint32_t qpn) {
  ibv_wc wc{};
  wc.wr_id = wr_id;
  wc.status = static_cast<ibv_wc_status>(status);
  wc.opcode = op;
  wc.qp_num = qpn;
  return wc;
}

}  // namespace

void FakeFabric::complete(FakeCq* cq, const ibv_wc& wc) {
  cq->q.push_back(wc);
  if (cq->armed && cq->cq.channel) {
    cq->armed = false;
    notified_[cq->cq.channel] = &cq->cq;
    const uint64_t one = 1;
    (void)!write(cq->cq.channel->fd, &one, sizeof one);
  }
}

int FakeFabric::modifyQp(ibv_qp* qp, ibv_qp_attr* a, int mask) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  FakeQp& q = *f.qps_.at(qp->qp_num);
  if (static_cast<int>(a->qp_state) == f.fail_modify_to) return f.fail_modify_errno;
  if (!legal(q.state, a->qp_state, mask)) return EINVAL;
  if (a->qp_state == IBV_QPS_INIT) q.init = *a;
  if (a->qp_state == IBV_QPS_RTR) q.rtr = *a, q.rtr_mask = mask;
  if (a->qp_state == IBV_QPS_RTS) q.rts = *a, q.rts_mask = mask;
  q.state = a->qp_state;
  if (q.state == IBV_QPS_ERR) {  // the adapter flushes every posted receive
    for (const ibv_recv_wr& w : q.rq)
      f.complete(f.cqs_.at(qp->recv_cq).get(),
                 wcFor(w.wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, qp->qp_num));
    q.rq.clear();
  }
  return 0;
}

int FakeFabric::postRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  FakeQp& q = *f.qps_.at(qp->qp_num);
  for (; wr; wr = wr->next) {
    if (q.state == IBV_QPS_RESET) return *bad = wr, EINVAL;
    if (q.state == IBV_QPS_ERR) {
      f.complete(f.cqs_.at(qp->recv_cq).get(),
                 wcFor(wr->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, qp->qp_num));
      continue;
    }
    q.rq_sges.push_back(wr->sg_list[0]);
    ibv_recv_wr copy = *wr;
    copy.next = nullptr;
    copy.sg_list = &q.rq_sges.back();
    q.rq.push_back(copy);
  }
  return 0;
}

void FakeFabric::fail(FakeQp& from, const ibv_send_wr& wr, int status) {
  complete(cqs_.at(from.qp.send_cq).get(), wcFor(wr.wr_id, status, IBV_WC_SEND, from.qp.qp_num));
  from.state = IBV_QPS_ERR;  // an error completion leaves the QP in ERR, as on hardware
}

// Moves one work request's bytes to the connected QP at once.
void FakeFabric::sendOne(FakeQp& from, const ibv_send_wr& wr) {
  if (inject_status != IBV_WC_SUCCESS) {
    const int s = inject_status;
    inject_status = IBV_WC_SUCCESS;
    return fail(from, wr, s);
  }
  auto peer_it = qps_.find(from.rtr.dest_qp_num);
  if (peer_it == qps_.end() || peer_it->second->state < IBV_QPS_RTR ||
      peer_it->second->state == IBV_QPS_ERR)
    return fail(from, wr, IBV_WC_RETRY_EXC_ERR);
  FakeQp& to = *peer_it->second;
  const ibv_sge& sge = wr.sg_list[0];
  if (!mrs_.count(sge.lkey)) return fail(from, wr, IBV_WC_LOC_PROT_ERR);
  if (to.rq.empty()) {  // hardware would retry on RNR NAKs: the protocol must never get here
    ++overruns;
    return fail(from, wr, IBV_WC_RNR_RETRY_EXC_ERR);
  }
  const ibv_recv_wr rwr = to.rq.front();
  ibv_wc rwc = wcFor(rwr.wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, to.qp.qp_num);
  rwc.byte_len = sge.length;
  const bool write = wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
  if (write) {
    auto mr = mrs_.find(wr.wr.rdma.rkey);
    auto* base = mr == mrs_.end() ? nullptr : static_cast<char*>(mr->second->mr.addr);
    // Verbs carries addresses as 64-bit integers; the fake wire turns them back into pointers.
    auto* dst =
        reinterpret_cast<char*>(wr.wr.rdma.remote_addr);  // NOLINT(performance-no-int-to-ptr)
    if (!base || !(mr->second->access & IBV_ACCESS_REMOTE_WRITE) || dst < base ||
        dst + sge.length > base + mr->second->mr.length)
      return fail(from, wr, IBV_WC_REM_ACCESS_ERR);
    std::memcpy(dst, reinterpret_cast<const void*>(sge.addr),  // NOLINT(performance-no-int-to-ptr)
                sge.length);
    rwc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
    rwc.wc_flags = IBV_WC_WITH_IMM;
    rwc.imm_data = wr.imm_data;
    ++writes;
  } else {
    if (sge.length > rwr.sg_list[0].length) return fail(from, wr, IBV_WC_REM_INV_REQ_ERR);
    std::memcpy(reinterpret_cast<void*>(rwr.sg_list[0].addr),  // NOLINT(performance-no-int-to-ptr)
                reinterpret_cast<const void*>(sge.addr),       // NOLINT(performance-no-int-to-ptr)
                sge.length);
    ++sends;
  }
  to.rq.pop_front();
  to.rq_sges.pop_front();
  complete(cqs_.at(to.qp.recv_cq).get(), rwc);
  if (wr.send_flags & IBV_SEND_SIGNALED)
    complete(
        cqs_.at(from.qp.send_cq).get(),
        wcFor(wr.wr_id, IBV_WC_SUCCESS, write ? IBV_WC_RDMA_WRITE : IBV_WC_SEND, from.qp.qp_num));
}

int FakeFabric::postSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  FakeQp& q = *f.qps_.at(qp->qp_num);
  for (; wr; wr = wr->next) {
    if (q.state == IBV_QPS_ERR) {
      f.complete(f.cqs_.at(qp->send_cq).get(),
                 wcFor(wr->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND, qp->qp_num));
      continue;
    }
    if (q.state != IBV_QPS_RTS) return *bad = wr, EINVAL;
    f.sendOne(q, *wr);
  }
  return 0;
}

int FakeFabric::pollCq(ibv_cq* cq, int n, ibv_wc* wc) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  FakeCq& c = *f.cqs_.at(cq);
  int got = 0;
  for (; got < n && !c.q.empty(); ++got) {
    wc[got] = c.q.front();
    c.q.pop_front();
  }
  return got;
}

int FakeFabric::reqNotify(ibv_cq* cq, int /*solicited*/) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  f.cqs_.at(cq)->armed = true;
  return 0;
}

int FakeFabric::getCqEvent(ibv_comp_channel* ch, ibv_cq** cq, void** ctx) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  uint64_t n = 0;
  if (read(ch->fd, &n, sizeof n) != sizeof n) return EAGAIN;
  *cq = f.notified_[ch];
  *ctx = nullptr;
  return 0;
}

void FakeFabric::injectAsync(ibv_event_type type, uint32_t qp_num) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  ibv_async_event ev{};
  ev.event_type = type;
  if (auto it = qps_.find(qp_num); it != qps_.end()) ev.element.qp = &it->second->qp;
  async_.push_back(ev);
  const uint64_t one = 1;
  for (auto& [c, ctx] : contexts_) (void)!write(ctx->async_fd, &one, sizeof one);
}

// Every context sees every injected event (one queue per fabric, one count per context).
int FakeFabric::getAsyncEvent(ibv_context* c, ibv_async_event* ev) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  uint64_t n = 0;
  size_t& next = f.async_read_[c];
  if (read(c->async_fd, &n, sizeof n) != sizeof n || next >= f.async_.size()) return EAGAIN;
  *ev = f.async_[next++];
  return 0;
}

}  // namespace ccscope::transports::verbs::fake
