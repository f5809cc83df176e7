// A loopback fabric behind the VerbsOps seam: devices, ports, GIDs, QPs with the RC state
// machine, and a wire that moves SENDs and RDMA WRITEs with immediate between connected fake
// QPs at post time, producing completions (injectable errors included). It stands in for the
// adapter only; the transport's protocol runs unchanged on top of it.
#pragma once

#include <infiniband/verbs.h>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "transports/verbs/verbs_ops.h"

namespace ccscope::transports::verbs::fake {

struct FakeQp {
  ibv_qp qp{};
  ibv_qp_state state = IBV_QPS_RESET;
  std::deque<ibv_recv_wr> rq;  // sg_list points into rq_sges
  std::deque<ibv_sge> rq_sges;
  ibv_qp_attr init{}, rtr{}, rts{};  // attributes of each transition
  int rtr_mask = 0, rts_mask = 0;
};

struct FakeCq {
  ibv_cq cq{};
  std::deque<ibv_wc> q;
  bool armed = false;
};

struct FakeMr {
  ibv_mr mr{};
  int access = 0;
};

class FakeFabric {
 public:
  explicit FakeFabric(int devices = 1);
  ~FakeFabric();
  const VerbsOps& ops() const;
  static FakeFabric& current();

  // Knobs a test sets before connecting or posting.
  ibv_port_state port_state = IBV_PORT_ACTIVE;
  int fail_modify_to = -1;  // an ibv_qp_state whose transition returns fail_modify_errno
  int fail_modify_errno = EINVAL;
  int inject_status = IBV_WC_SUCCESS;  // the next send completes with this status
  // What the wire saw.
  int overruns = 0;  // a SEND or write with immediate found no receive posted
  int sends = 0, writes = 0;

  void injectAsync(ibv_event_type type, uint32_t qp_num);
  std::vector<FakeQp*> qps();

  // The seam's entries (static: VerbsOps holds plain function pointers).
  static ibv_device** getDeviceList(int* n);
  static ibv_context* openDevice(ibv_device* d);
  static int closeDevice(ibv_context* c);
  static int queryPort(ibv_context* c, uint8_t port, ibv_port_attr* a);
  static ibv_pd* allocPd(ibv_context* c);
  static int queryGid(ibv_context* c, uint32_t port, uint32_t index, ibv_gid_entry* e);
  static ibv_mr* regMr(ibv_pd* pd, void* addr, size_t len, int access);
  static int deregMr(ibv_mr* mr);
  static ibv_comp_channel* createChannel(ibv_context* c);
  static int destroyChannel(ibv_comp_channel* ch);
  static ibv_cq* createCq(ibv_context* c, int cqe, ibv_comp_channel* ch);
  static int destroyCq(ibv_cq* cq);
  static ibv_qp* createQp(ibv_pd* pd, ibv_qp_init_attr* a);
  static int destroyQp(ibv_qp* qp);
  static int modifyQp(ibv_qp* qp, ibv_qp_attr* a, int mask);
  static int postSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
  static int postRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
  static int pollCq(ibv_cq* cq, int n, ibv_wc* wc);
  static int reqNotify(ibv_cq* cq, int solicited);
  static int getCqEvent(ibv_comp_channel* ch, ibv_cq** cq, void** ctx);
  static int getAsyncEvent(ibv_context* c, ibv_async_event* ev);

 private:
  void complete(FakeCq* cq, const ibv_wc& wc);
  void sendOne(FakeQp& from, const ibv_send_wr& wr);
  void fail(FakeQp& from, const ibv_send_wr& wr, int status);
  std::recursive_mutex mu_;  // the async thread reads events while the test injects them
  std::vector<std::unique_ptr<ibv_device>> devices_;
  std::vector<ibv_device*> list_;
  std::map<ibv_context*, std::unique_ptr<ibv_context>> contexts_;
  std::map<ibv_pd*, std::unique_ptr<ibv_pd>> pds_;
  std::map<uint32_t, std::unique_ptr<FakeMr>> mrs_;  // by lkey (= rkey)
  std::map<ibv_comp_channel*, std::unique_ptr<ibv_comp_channel>> channels_;
  std::map<ibv_comp_channel*, ibv_cq*> notified_;
  std::map<ibv_cq*, std::unique_ptr<FakeCq>> cqs_;
  std::map<uint32_t, std::unique_ptr<FakeQp>> qps_;  // by qp_num
  std::deque<ibv_async_event> async_;
  std::map<ibv_context*, size_t> async_read_;
  uint32_t next_key_ = 0x100, next_qpn_ = 0x40;
};

}  // namespace ccscope::transports::verbs::fake
