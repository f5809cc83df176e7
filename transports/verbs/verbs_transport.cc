// The verbs transport's setup and teardown: device, protection domain, completion queue and
// channel, the eager ring, one RC QP per peer connected through the bootstrap, registration,
// sleeping on the completion channel, and the async-event thread.
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "transports/common/hex.h"
#include "transports/verbs/verbs_errors.h"
#include "transports/verbs/verbs_impl.h"

namespace ccscope::transports::verbs {

using core::Code;
using core::Layer;
using core::Status;

namespace {

constexpr int kAsyncPollMs = 100;  // how soon the async thread notices close()
constexpr uint32_t kAddrVersion = 1;

struct WireAddress {
  uint32_t magic = kWireMagic;
  uint32_t version = kAddrVersion;
  QpAddress qp;
};

}  // namespace

Status VerbsTransport::createResources() {
  const std::string& dev = dev_.port.name;
  if (!(pd_ = ops_.alloc_pd(dev_.ctx))) return callError("ibv_alloc_pd", errno, dev);
  if (!(channel_ = ops_.create_comp_channel(dev_.ctx)))
    return callError("ibv_create_comp_channel", errno, dev);
  // Every ring receive, staged send and rendezvous write of every peer may complete at once.
  const int cqe = static_cast<int>(size_ * kRingSlots * 3 + 16);
  if (!(cq_ = ops_.create_cq(dev_.ctx, cqe, channel_)))
    return callError("ibv_create_cq", errno, dev);
  wcs_.resize(32);
  const size_t bytes = static_cast<size_t>(size_) * 2 * kRingSlots * kSlotBytes;
  ring_mem_ = core::HostBuffer(bytes);
  if (!(ring_mr_ = ops_.reg_mr(pd_, ring_mem_.data(), bytes, IBV_ACCESS_LOCAL_WRITE)))
    return callError("ibv_reg_mr", errno, dev).prepend("registering the eager ring");
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return core::errnoStatus("eventfd", errno, Layer::kRdma);
  return Status::ok();
}

Status VerbsTransport::createQp(int p) {
  Peer& peer = peers_[p];
  ibv_qp_init_attr a{};
  a.send_cq = cq_;
  a.recv_cq = cq_;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = 3 * kRingSlots;  // staged sends and rendezvous writes
  a.cap.max_recv_wr = kRingSlots;
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  if (!(peer.qp = ops_.create_qp(pd_, &a)))
    return callError("ibv_create_qp", errno, dev_.port.name, p);
  peer.sm = std::make_unique<QpStateMachine>(ops_, peer.qp, dev_.port, p);
  // Unlike rc_pingpong (sends only), rendezvous needs peers to write into our buffers.
  CCSCOPE_RETURN_IF_ERROR(peer.sm->toInit(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
  for (uint32_t i = 0; i < kRingSlots; ++i) {
    CCSCOPE_RETURN_IF_ERROR(postRing(p, i));
    peer.free_stage.push_back(kRingSlots - 1 - i);
  }
  return Status::ok();
}

Status VerbsTransport::exchangeAddresses(launch::Bootstrap& bs, core::Deadline deadline) {
  std::random_device rd;
  std::vector<uint32_t> psn(size_);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    WireAddress w;
    w.qp.qpn = peers_[p].qp->qp_num;
    w.qp.psn = psn[p] = rd() & 0xffffff;
    w.qp.lid = dev_.port.attr.lid;
    w.qp.mtu = static_cast<uint8_t>(dev_.port.attr.active_mtu);
    w.qp.global = dev_.port.gid_index >= 0 ? 1 : 0;
    w.qp.gid = dev_.port.gid;
    CCSCOPE_RETURN_IF_ERROR(
        bs.put(fmt::format("{}verbs/addr/{}/{}", opts_.scope, rank_, p), toHex(&w, sizeof w)));
  }
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    CCSCOPE_ASSIGN_OR_RETURN(
        std::string v, bs.get(fmt::format("{}verbs/addr/{}/{}", opts_.scope, p, rank_), deadline));
    WireAddress w;
    if (!fromHex(v, &w, sizeof w) || w.magic != kWireMagic || w.version != kAddrVersion)
      return Status(Code::kRemoteError,
                    fmt::format("rank {} published a malformed verbs address", p))
          .withLayer(Layer::kRdma)
          .withPeer(p);
    const auto mtu = static_cast<ibv_mtu>(std::min<int>(w.qp.mtu, dev_.port.attr.active_mtu));
    CCSCOPE_RETURN_IF_ERROR(peers_[p].sm->toRtr(w.qp, mtu));
    CCSCOPE_RETURN_IF_ERROR(peers_[p].sm->toRts(psn[p]));
  }
  // Nobody sends before every QP it sends to is ready to receive.
  return bs.barrier(opts_.scope + "verbs-rts", deadline);
}

Status VerbsTransport::connect(launch::Bootstrap& bs, core::Deadline deadline) {
  initTable(bs.rank(), bs.size(), request_slots_);
  setSpinPolicy(opts_.local_ranks);
  CCSCOPE_ASSIGN_OR_RETURN(dev_, openDevice(ops_, opts_.rdma_dev, opts_.gid_index));
  peers_ = std::vector<Peer>(size_);
  advertised_.assign(table_->capacity(), 0);
  seq_of_.assign(table_->capacity(), 0);
  lkey_of_.assign(table_->capacity(), 0);
  rkey_of_.assign(table_->capacity(), 0);
  CCSCOPE_RETURN_IF_ERROR(createResources());
  for (int p = 0; p < size_; ++p)
    if (p != rank_) CCSCOPE_RETURN_IF_ERROR(createQp(p));
  CCSCOPE_RETURN_IF_ERROR(exchangeAddresses(bs, deadline));
  async_thread_ = std::thread([this] { asyncLoop(); });
  setConnected(true);
  return Status::ok();
}

core::Result<MemoryKeys> VerbsTransport::doRegister(char* base, size_t len, MemoryKind /*kind*/,
                                                    int /*device*/) {
  if (!pd_)
    return Status(Code::kUnavailable, "verbs: register memory after connect()")
        .withLayer(Layer::kRdma);
  ibv_mr* mr = ops_.reg_mr(pd_, base, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!mr)
    return callError("ibv_reg_mr", errno, dev_.port.name)
        .prepend(fmt::format("registering {} B at {}", len, static_cast<void*>(base)));
  MemoryKeys k;
  k.lkey = mr->lkey;
  k.rkey = mr->rkey;
  k.handle = mr;
  mrs_.push_back(mr);
  return k;
}

void VerbsTransport::doDeregister(const MemoryRegion& mr) {
  auto* m = static_cast<ibv_mr*>(mr.keys().handle);
  if (!m || std::erase(mrs_, m) == 0) return;  // released at close already
  ops_.dereg_mr(m);
}

// Events are copied and acknowledged here, applied on the transport's thread (drainAsync): the
// request table belongs to that thread alone.
void VerbsTransport::asyncLoop() {
  while (!stop_.load()) {
    pollfd pf{dev_.ctx->async_fd, POLLIN, 0};
    if (poll(&pf, 1, kAsyncPollMs) <= 0 || !(pf.revents & POLLIN)) continue;
    ibv_async_event ev{};
    if (ops_.get_async_event(dev_.ctx, &ev) != 0) continue;
    AsyncNote n{ev.event_type, 0};
    if (ev.event_type == IBV_EVENT_QP_FATAL || ev.event_type == IBV_EVENT_QP_REQ_ERR ||
        ev.event_type == IBV_EVENT_QP_ACCESS_ERR)
      n.qp_num = ev.element.qp ? ev.element.qp->qp_num : 0;
    ops_.ack_async_event(&ev);
    {
      std::lock_guard<std::mutex> lock(async_mu_);
      async_notes_.push_back(n);
    }
    async_pending_.store(true);
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
  }
}

void VerbsTransport::drainAsync() {
  std::vector<AsyncNote> notes;
  {
    std::lock_guard<std::mutex> lock(async_mu_);
    notes.swap(async_notes_);
    async_pending_.store(false);
  }
  for (const AsyncNote& n : notes) {
    const bool per_qp = n.type == IBV_EVENT_QP_FATAL || n.type == IBV_EVENT_QP_REQ_ERR ||
                        n.type == IBV_EVENT_QP_ACCESS_ERR;
    const bool fatal = per_qp || n.type == IBV_EVENT_PORT_ERR || n.type == IBV_EVENT_DEVICE_FATAL ||
                       n.type == IBV_EVENT_GID_CHANGE || n.type == IBV_EVENT_CQ_ERR;
    if (!fatal) continue;  // informational (port active, SM change, ...)
    for (int p = 0; p < size_; ++p) {
      if (p == rank_ || (per_qp && (!peers_[p].qp || peers_[p].qp->qp_num != n.qp_num))) continue;
      failPeer(p, asyncError(n.type, dev_.port.name, p));
    }
  }
}

// A short spin already happened in the base class: arm the CQ, catch what raced the arming,
// then sleep on the completion channel (and the async thread's wake-up).
void VerbsTransport::blockFor(int64_t max_ns) {
  if (!connected() || closed_) return;
  for (int p = 0; p < size_; ++p)
    if (p != rank_ && !peers_[p].dead) returnCredits(p, /*idle=*/true);
  if (!armed_ && ops_.req_notify_cq(cq_, 0) == 0) armed_ = true;
  if (drainCq() > 0 || async_pending_.load()) return;
  pollfd pf[2] = {{channel_->fd, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  const int ms = static_cast<int>((max_ns + 999'999) / 1'000'000);
  if (poll(pf, 2, ms) <= 0) return;
  if (pf[0].revents & POLLIN) {
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    if (ops_.get_cq_event(channel_, &cq, &ctx) == 0) {
      ops_.ack_cq_events(cq, 1);
      armed_ = false;
    }
  }
  if (pf[1].revents & POLLIN) {
    uint64_t n = 0;
    (void)!read(wake_fd_, &n, sizeof n);
  }
}

void VerbsTransport::releaseResources() {
  for (Peer& p : peers_)
    if (p.qp) ops_.destroy_qp(p.qp), p.qp = nullptr;
  for (ibv_mr* m : mrs_) ops_.dereg_mr(m);
  mrs_.clear();
  if (ring_mr_) ops_.dereg_mr(ring_mr_), ring_mr_ = nullptr;
  if (cq_) ops_.destroy_cq(cq_), cq_ = nullptr;
  if (channel_) ops_.destroy_comp_channel(channel_), channel_ = nullptr;
  if (pd_) ops_.dealloc_pd(pd_), pd_ = nullptr;
  if (wake_fd_ >= 0) ::close(wake_fd_), wake_fd_ = -1;
  dev_ = OpenDevice{};
}

void VerbsTransport::close() {
  if (closed_) return;
  closed_ = true;
  stop_.store(true);
  if (async_thread_.joinable()) async_thread_.join();
  const Status why(Code::kAborted, "verbs transport closed");
  for (int p = 0; p < static_cast<int>(peers_.size()); ++p)
    if (p != rank_) failPeer(p, why);
  releaseResources();
  setConnected(false);
}

std::unique_ptr<Transport> makeVerbsTransportOn(const TransportOptions& opts, const VerbsOps& ops) {
  return std::make_unique<VerbsTransport>(opts, ops);
}

Status verbsUsableOn(const VerbsOps& ops) {
  int n = 0;
  ibv_device** list = ops.get_device_list(&n);
  if (list) ops.free_device_list(list);
  return list && n > 0 ? Status::ok() : noDevice();
}

}  // namespace ccscope::transports::verbs
