// Device, port and GID choice, the QP state machine, and completion statuses, through the fake.
#include <gtest/gtest.h>

#include "tests/transports/verbs/fake_verbs.h"
#include "tests/transports/verbs/verbs_pair.h"
#include "transports/verbs/verbs_device.h"
#include "transports/verbs/verbs_errors.h"

namespace ccscope::transports::verbs::fake {
namespace {

TEST(VerbsDeviceTest, NoDeviceIsUnavailableWithOneReason) {
  FakeFabric f(0);
  core::Status s = verbsUsableOn(f.ops());
  EXPECT_EQ(s.code(), core::Code::kUnavailable);
  EXPECT_EQ(s.layer(), core::Layer::kRdma);
  EXPECT_EQ(s.message(),
            "no RDMA device: ibv_get_device_list found none (is the driver loaded? `ibv_devices`)");
  auto t = makeVerbsTransportOn({}, f.ops());  // connect() says the same
  SharedStore store;
  ThreadBootstrap bs(store, 0, 1);
  core::Status c = t->connect(bs, core::Deadline::afterSeconds(1));
  EXPECT_EQ(c.code(), core::Code::kUnavailable);
  EXPECT_EQ(c.message(), s.message());
}

TEST(VerbsDeviceTest, PicksFirstRoceV2GidAndHonoursOverride) {
  FakeFabric f;
  auto d = openDevice(f.ops(), "", -1);
  ASSERT_TRUE(d.isOk()) << d.status().toString();
  EXPECT_EQ(d->port.name, "fake0:1");
  EXPECT_EQ(d->port.gid_index, 1);  // index 0 is RoCE v1, index 2 is empty
  auto o = openDevice(f.ops(), "fake0:1", 0);
  ASSERT_TRUE(o.isOk());
  EXPECT_EQ(o->port.gid_index, 0);
  EXPECT_FALSE(openDevice(f.ops(), "fake0:1", 2).isOk());  // a zero GID
}

TEST(VerbsDeviceTest, PortNotActiveIsNamed) {
  FakeFabric f;
  f.port_state = IBV_PORT_DOWN;
  auto d = openDevice(f.ops(), "fake0:1", -1);
  ASSERT_FALSE(d.isOk());
  EXPECT_NE(d.status().message().find("fake0:1 is DOWN (not ACTIVE)"), std::string::npos)
      << d.status().message();
  auto any = openDevice(f.ops(), "", -1);
  EXPECT_NE(any.status().message().find("no ACTIVE RDMA port"), std::string::npos);
  auto wrong = openDevice(f.ops(), "mlx5_9", -1);
  EXPECT_NE(wrong.status().message().find("no such device (found: fake0"), std::string::npos)
      << wrong.status().message();
}

TEST(VerbsQpStateTest, WalksResetInitRtrRtsWithRcPingpongAttributes) {
  Pair p;
  auto [a, b] = p.connect();
  ASSERT_TRUE(a.isOk()) << a.toString();
  ASSERT_TRUE(b.isOk()) << b.toString();
  ASSERT_EQ(p.fabric.qps().size(), 2u);
  for (FakeQp* q : p.fabric.qps()) {
    EXPECT_EQ(q->state, IBV_QPS_RTS);
    EXPECT_EQ(q->init.port_num, 1);
    EXPECT_TRUE(q->init.qp_access_flags & IBV_ACCESS_REMOTE_WRITE);
    EXPECT_EQ(q->rtr.path_mtu, IBV_MTU_1024);
    EXPECT_EQ(q->rtr.max_dest_rd_atomic, 1);
    EXPECT_EQ(q->rtr.min_rnr_timer, 12);
    EXPECT_EQ(q->rtr.ah_attr.is_global, 1);
    EXPECT_EQ(q->rtr.ah_attr.grh.sgid_index, 1);
    EXPECT_EQ(q->rts.timeout, 14);
    EXPECT_EQ(q->rts.retry_cnt, 7);
    EXPECT_EQ(q->rts.rnr_retry, 7);
    EXPECT_EQ(q->rts.max_rd_atomic, 1);
  }
  FakeQp* q0 = p.fabric.qps()[0];
  FakeQp* q1 = p.fabric.qps()[1];
  EXPECT_EQ(q0->rtr.dest_qp_num, q1->qp.qp_num);
  EXPECT_EQ(q1->rtr.dest_qp_num, q0->qp.qp_num);
  EXPECT_EQ(q0->rtr.rq_psn, q1->rts.sq_psn);
}

TEST(VerbsQpStateTest, IllegalTransitionNamesTheStates) {
  FakeFabric f;
  auto d = openDevice(f.ops(), "", -1);
  ASSERT_TRUE(d.isOk());
  ibv_pd* pd = f.ops().alloc_pd(d->ctx);
  ibv_cq* cq = f.ops().create_cq(d->ctx, 8, nullptr);
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_RC;
  ibv_qp* qp = f.ops().create_qp(pd, &ia);
  QpStateMachine sm(f.ops(), qp, d->port, 3);
  core::Status s = sm.toRts(1);
  EXPECT_EQ(s.message(), "QP to rank 3 on fake0:1 is in RESET; RTS needs RTR");
  EXPECT_EQ(s.call(), "ibv_modify_qp(RTS)");
  ASSERT_TRUE(sm.toInit(IBV_ACCESS_LOCAL_WRITE).isOk());
  f.fail_modify_to = IBV_QPS_RTR;
  f.fail_modify_errno = ETIMEDOUT;
  s = sm.toRtr(QpAddress{}, IBV_MTU_1024);
  EXPECT_EQ(s.call(), "ibv_modify_qp(RTR)");
  EXPECT_EQ(s.nativeCode(), ETIMEDOUT);
  EXPECT_NE(s.message().find("moving the QP from INIT to RTR"), std::string::npos) << s.message();
  EXPECT_EQ(sm.state(), IBV_QPS_INIT);
}

// Every completion status a peer's request can end with, as the user reads it.
class VerbsWcStatusTest : public ::testing::TestWithParam<int> {};

TEST_P(VerbsWcStatusTest, FailedCompletionBecomesActionableMessage) {
  const int status = GetParam();
  Pair p;
  auto [a, b] = p.connect();
  ASSERT_TRUE(a.isOk() && b.isOk());
  std::vector<char> buf(64);
  auto reg = p.t[0]->registerMemory(buf.data(), buf.size());
  ASSERT_TRUE(reg.isOk());
  auto recv = p.t[0]->postRecv(1, 7, reg->region(), 0, 32);
  ASSERT_TRUE(recv.isOk());
  p.fabric.inject_status = status;
  auto send = p.t[0]->postSend(1, 7, reg->region(), 32, 32);
  ASSERT_TRUE(send.isOk());
  ASSERT_TRUE(p.drive([&] { return p.t[0]->test(*recv); }));
  core::Status s = p.t[0]->wait(*recv, core::Deadline::afterSeconds(1));
  const WcStatusInfo info = wcStatusInfo(status);
  EXPECT_NE(s.message().find(std::string(info.name) + " from peer r1 on fake0:1: " + info.advice),
            std::string::npos)
      << s.message();
  EXPECT_NE(std::string(info.advice), "");
  EXPECT_EQ(s.nativeCode(), status);
  EXPECT_EQ(s.call(), "ibv_poll_cq");
  EXPECT_EQ(s.layer(), core::Layer::kRdma);
  EXPECT_EQ(s.peer(), 1);
}

INSTANTIATE_TEST_SUITE_P(AllStatuses, VerbsWcStatusTest,
                         ::testing::Range(static_cast<int>(IBV_WC_LOC_LEN_ERR),
                                          static_cast<int>(IBV_WC_TM_RNDV_INCOMPLETE) + 1));

TEST(VerbsWcStatusTableTest, RetryExceededReadsAsTheIssueAsks) {
  core::Status s = wcError(IBV_WC_RETRY_EXC_ERR, 0x81, 3, "mlx5_1:1");
  EXPECT_EQ(s.message().rfind("IBV_WC_RETRY_EXC_ERR from peer r3 on mlx5_1:1: the remote port is "
                              "down or unreachable; check `ibstat` there",
                              0),
            0u)
      << s.message();
}

}  // namespace
}  // namespace ccscope::transports::verbs::fake
