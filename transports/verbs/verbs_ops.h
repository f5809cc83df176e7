// The seam between the verbs transport and libibverbs: every verbs call the transport makes goes
// through this table of plain function pointers. rdma-core's post/poll/notify are inline calls
// through the context's own ops, so a table is the one place a test can stand in for hardware
// (tests/transports/verbs/fake_verbs.h); the real table (verbs_ops_real.cc) calls libibverbs.
// Calls keep libibverbs' conventions: pointers are nullptr with errno set on failure, ints are 0
// or an errno value.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "core/status.h"
#include "transports/transport.h"

namespace ccscope::transports::verbs {

struct VerbsOps {
  ibv_device** (*get_device_list)(int* n);
  void (*free_device_list)(ibv_device** list);
  const char* (*get_device_name)(ibv_device* dev);
  ibv_context* (*open_device)(ibv_device* dev);
  int (*close_device)(ibv_context* ctx);
  int (*query_device)(ibv_context* ctx, ibv_device_attr* attr);
  int (*query_port)(ibv_context* ctx, uint8_t port, ibv_port_attr* attr);
  int (*query_gid_ex)(ibv_context* ctx, uint32_t port, uint32_t index, ibv_gid_entry* entry);
  ibv_pd* (*alloc_pd)(ibv_context* ctx);
  int (*dealloc_pd)(ibv_pd* pd);
  ibv_mr* (*reg_mr)(ibv_pd* pd, void* addr, size_t len, int access);
  int (*dereg_mr)(ibv_mr* mr);
  ibv_comp_channel* (*create_comp_channel)(ibv_context* ctx);
  int (*destroy_comp_channel)(ibv_comp_channel* ch);
  ibv_cq* (*create_cq)(ibv_context* ctx, int cqe, ibv_comp_channel* ch);
  int (*destroy_cq)(ibv_cq* cq);
  ibv_qp* (*create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr);
  int (*destroy_qp)(ibv_qp* qp);
  int (*modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int mask);
  int (*post_send)(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
  int (*post_recv)(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
  int (*poll_cq)(ibv_cq* cq, int n, ibv_wc* wc);  // entries polled, or < 0
  int (*req_notify_cq)(ibv_cq* cq, int solicited_only);
  int (*get_cq_event)(ibv_comp_channel* ch, ibv_cq** cq, void** cq_ctx);
  void (*ack_cq_events)(ibv_cq* cq, unsigned n);
  // Called only once ctx->async_fd is readable, so it does not block.
  int (*get_async_event)(ibv_context* ctx, ibv_async_event* ev);
  void (*ack_async_event)(ibv_async_event* ev);
};

// The transport over any table (the factory uses realVerbsOps(), the seam tests a fake one).
std::unique_ptr<Transport> makeVerbsTransportOn(const TransportOptions& opts, const VerbsOps& ops);
// kUnavailable (layer rdma) when the table finds no device.
core::Status verbsUsableOn(const VerbsOps& ops);

}  // namespace ccscope::transports::verbs
