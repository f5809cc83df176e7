#include "tests/transports/verbs/fake_verbs.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ccscope::transports::verbs::fake {

namespace {

FakeFabric* g_current = nullptr;  // get_device_list takes no context to find the fabric by

const VerbsOps kFakeOps{
    .get_device_list = FakeFabric::getDeviceList,
    .free_device_list = [](ibv_device** /*l*/) {},
    .get_device_name = [](ibv_device* d) -> const char* { return d->name; },
    .open_device = FakeFabric::openDevice,
    .close_device = FakeFabric::closeDevice,
    .query_device =
        [](ibv_context* /*c*/, ibv_device_attr* a) {
          *a = ibv_device_attr{};
          a->phys_port_cnt = 1;
          return 0;
        },
    .query_port = FakeFabric::queryPort,
    .query_gid_ex = FakeFabric::queryGid,
    .alloc_pd = FakeFabric::allocPd,
    .dealloc_pd = [](ibv_pd* /*pd*/) { return 0; },
    .reg_mr = FakeFabric::regMr,
    .dereg_mr = FakeFabric::deregMr,
    .create_comp_channel = FakeFabric::createChannel,
    .destroy_comp_channel = FakeFabric::destroyChannel,
    .create_cq = FakeFabric::createCq,
    .destroy_cq = FakeFabric::destroyCq,
    .create_qp = FakeFabric::createQp,
    .destroy_qp = FakeFabric::destroyQp,
    .modify_qp = FakeFabric::modifyQp,
    .post_send = FakeFabric::postSend,
    .post_recv = FakeFabric::postRecv,
    .poll_cq = FakeFabric::pollCq,
    .req_notify_cq = FakeFabric::reqNotify,
    .get_cq_event = FakeFabric::getCqEvent,
    .ack_cq_events = [](ibv_cq* /*cq*/, unsigned /*n*/) {},
    .get_async_event = FakeFabric::getAsyncEvent,
    .ack_async_event = [](ibv_async_event* /*e*/) {},
};

}  // namespace

FakeFabric::FakeFabric(int devices) {
  for (int i = 0; i < devices; ++i) {
    auto d = std::make_unique<ibv_device>();
    std::snprintf(d->name, sizeof d->name, "fake%d", i);
    list_.push_back(d.get());
    devices_.push_back(std::move(d));
  }
  list_.push_back(nullptr);
  g_current = this;
}

FakeFabric::~FakeFabric() {
  for (auto& [c, ctx] : contexts_) ::close(ctx->async_fd);
  for (auto& [p, ch] : channels_) ::close(ch->fd);
  if (g_current == this) g_current = nullptr;
}

const VerbsOps& FakeFabric::ops() const { return kFakeOps; }
FakeFabric& FakeFabric::current() { return *g_current; }

std::vector<FakeQp*> FakeFabric::qps() {
  std::vector<FakeQp*> out;
  for (auto& [n, q] : qps_) out.push_back(q.get());
  return out;
}

ibv_device** FakeFabric::getDeviceList(int* n) {
  FakeFabric& f = current();
  *n = static_cast<int>(f.devices_.size());
  return f.list_.data();
}

ibv_context* FakeFabric::openDevice(ibv_device* d) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  auto c = std::make_unique<ibv_context>();
  c->device = d;
  c->async_fd = eventfd(0, EFD_NONBLOCK | EFD_SEMAPHORE | EFD_CLOEXEC);
  ibv_context* raw = c.get();
  f.contexts_[raw] = std::move(c);
  return raw;
}

int FakeFabric::closeDevice(ibv_context* c) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  ::close(c->async_fd);
  f.contexts_.erase(c);
  return 0;
}

int FakeFabric::queryPort(ibv_context* /*c*/, uint8_t /*port*/, ibv_port_attr* a) {
  *a = ibv_port_attr{};
  a->state = current().port_state;
  a->active_mtu = IBV_MTU_1024;
  a->max_mtu = IBV_MTU_4096;
  a->link_layer = IBV_LINK_LAYER_ETHERNET;
  a->gid_tbl_len = 4;
  return 0;
}

// Index 0 is RoCE v1, index 1 RoCE v2, index 2 RoCE v2 but empty, index 3 absent.
int FakeFabric::queryGid(ibv_context* /*c*/, uint32_t port, uint32_t index, ibv_gid_entry* e) {
  if (index >= 3) return ENODATA;
  *e = ibv_gid_entry{};
  e->port_num = port;
  e->gid_index = index;
  e->gid_type = index == 0 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2;
  if (index < 2) e->gid.raw[15] = static_cast<uint8_t>(index + 1);
  return 0;
}

ibv_pd* FakeFabric::allocPd(ibv_context* c) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  auto pd = std::make_unique<ibv_pd>();
  pd->context = c;
  ibv_pd* raw = pd.get();
  f.pds_[raw] = std::move(pd);
  return raw;
}

ibv_mr* FakeFabric::regMr(ibv_pd* pd, void* addr, size_t len, int access) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  auto m = std::make_unique<FakeMr>();
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = addr;
  m->mr.length = len;
  m->mr.lkey = m->mr.rkey = f.next_key_++;
  m->access = access;
  ibv_mr* raw = &m->mr;
  f.mrs_[raw->lkey] = std::move(m);
  return raw;
}

int FakeFabric::deregMr(ibv_mr* mr) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  return f.mrs_.erase(mr->lkey) ? 0 : EINVAL;
}

ibv_comp_channel* FakeFabric::createChannel(ibv_context* c) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  auto ch = std::make_unique<ibv_comp_channel>();
  ch->context = c;
  ch->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ibv_comp_channel* raw = ch.get();
  f.channels_[raw] = std::move(ch);
  return raw;
}

int FakeFabric::destroyChannel(ibv_comp_channel* ch) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  ::close(ch->fd);
  f.channels_.erase(ch);
  return 0;
}

ibv_cq* FakeFabric::createCq(ibv_context* c, int cqe, ibv_comp_channel* ch) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  auto cq = std::make_unique<FakeCq>();
  cq->cq.context = c;
  cq->cq.channel = ch;
  cq->cq.cqe = cqe;
  ibv_cq* raw = &cq->cq;
  f.cqs_[raw] = std::move(cq);
  return raw;
}

int FakeFabric::destroyCq(ibv_cq* cq) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  f.cqs_.erase(cq);
  return 0;
}

ibv_qp* FakeFabric::createQp(ibv_pd* pd, ibv_qp_init_attr* a) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  auto q = std::make_unique<FakeQp>();
  q->qp.context = pd->context;
  q->qp.pd = pd;
  q->qp.send_cq = a->send_cq;
  q->qp.recv_cq = a->recv_cq;
  q->qp.qp_type = a->qp_type;
  q->qp.qp_num = f.next_qpn_++;
  ibv_qp* raw = &q->qp;
  f.qps_[raw->qp_num] = std::move(q);
  return raw;
}

int FakeFabric::destroyQp(ibv_qp* qp) {
  FakeFabric& f = current();
  std::lock_guard<std::recursive_mutex> l(f.mu_);
  f.qps_.erase(qp->qp_num);
  return 0;
}

}  // namespace ccscope::transports::verbs::fake
