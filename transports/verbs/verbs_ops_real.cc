// The real seam: each entry calls libibverbs (the inline post/poll/notify included).
#include "transports/verbs/verbs_ops.h"
#include "transports/verbs/verbs_transport.h"

namespace ccscope::transports {

namespace verbs {

namespace {

const VerbsOps kRealOps{
    .get_device_list = [](int* n) { return ibv_get_device_list(n); },
    .free_device_list = [](ibv_device** l) { ibv_free_device_list(l); },
    .get_device_name = [](ibv_device* d) { return ibv_get_device_name(d); },
    .open_device = [](ibv_device* d) { return ibv_open_device(d); },
    .close_device = [](ibv_context* c) { return ibv_close_device(c); },
    .query_device = [](ibv_context* c, ibv_device_attr* a) { return ibv_query_device(c, a); },
    .query_port = [](ibv_context* c, uint8_t p,
                     ibv_port_attr* a) { return ibv_query_port(c, p, a); },
    .query_gid_ex = [](ibv_context* c, uint32_t p, uint32_t i,
                       ibv_gid_entry* e) { return ibv_query_gid_ex(c, p, i, e, 0); },
    .alloc_pd = [](ibv_context* c) { return ibv_alloc_pd(c); },
    .dealloc_pd = [](ibv_pd* pd) { return ibv_dealloc_pd(pd); },
    .reg_mr = [](ibv_pd* pd, void* a, size_t n, int acc) { return ibv_reg_mr(pd, a, n, acc); },
    .dereg_mr = [](ibv_mr* mr) { return ibv_dereg_mr(mr); },
    .create_comp_channel = [](ibv_context* c) { return ibv_create_comp_channel(c); },
    .destroy_comp_channel = [](ibv_comp_channel* ch) { return ibv_destroy_comp_channel(ch); },
    .create_cq = [](ibv_context* c, int n,
                    ibv_comp_channel* ch) { return ibv_create_cq(c, n, nullptr, ch, 0); },
    .destroy_cq = [](ibv_cq* cq) { return ibv_destroy_cq(cq); },
    .create_qp = [](ibv_pd* pd, ibv_qp_init_attr* a) { return ibv_create_qp(pd, a); },
    .destroy_qp = [](ibv_qp* qp) { return ibv_destroy_qp(qp); },
    .modify_qp = [](ibv_qp* qp, ibv_qp_attr* a, int m) { return ibv_modify_qp(qp, a, m); },
    .post_send = [](ibv_qp* qp, ibv_send_wr* w,
                    ibv_send_wr** b) { return ibv_post_send(qp, w, b); },
    .post_recv = [](ibv_qp* qp, ibv_recv_wr* w,
                    ibv_recv_wr** b) { return ibv_post_recv(qp, w, b); },
    .poll_cq = [](ibv_cq* cq, int n, ibv_wc* wc) { return ibv_poll_cq(cq, n, wc); },
    .req_notify_cq = [](ibv_cq* cq, int s) { return ibv_req_notify_cq(cq, s); },
    .get_cq_event = [](ibv_comp_channel* ch, ibv_cq** cq,
                       void** x) { return ibv_get_cq_event(ch, cq, x); },
    .ack_cq_events = [](ibv_cq* cq, unsigned n) { ibv_ack_cq_events(cq, n); },
    .get_async_event = [](ibv_context* c, ibv_async_event* e) { return ibv_get_async_event(c, e); },
    .ack_async_event = [](ibv_async_event* e) { ibv_ack_async_event(e); },
};

}  // namespace

}  // namespace verbs

std::unique_ptr<Transport> makeVerbsTransport(const TransportOptions& opts) {
  return verbs::makeVerbsTransportOn(opts, verbs::kRealOps);
}

core::Status verbsUsable() { return verbs::verbsUsableOn(verbs::kRealOps); }

}  // namespace ccscope::transports
