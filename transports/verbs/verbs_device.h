// Choosing and opening the RDMA device and port (--rdma-dev or the first ACTIVE port), finding
// the GID (RoCE v2 on Ethernet), and the RC QP state machine (RESET -> INIT -> RTR -> RTS) with
// the attributes rdma-core's rc_pingpong uses.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

#include "core/status.h"
#include "transports/verbs/verbs_ops.h"

namespace ccscope::transports::verbs {

// What a QP needs of the port it runs on; `name` is "mlx5_0:1" for every message.
struct PortInfo {
  std::string name;
  uint8_t port = 0;
  ibv_port_attr attr{};
  int gid_index = -1;  // -1: no GRH (InfiniBand without an override)
  ibv_gid gid{};
  bool roce() const { return attr.link_layer == IBV_LINK_LAYER_ETHERNET; }
};

// An open device context on the chosen port; closes the context when it goes.
struct OpenDevice {
  const VerbsOps* ops = nullptr;
  ibv_context* ctx = nullptr;
  PortInfo port;
  OpenDevice() = default;
  OpenDevice(OpenDevice&& o) noexcept { *this = std::move(o); }
  OpenDevice& operator=(OpenDevice&& o) noexcept;
  OpenDevice(const OpenDevice&) = delete;
  OpenDevice& operator=(const OpenDevice&) = delete;
  ~OpenDevice();
};

// `rdma_dev` is "" (first ACTIVE port), "dev" (its first ACTIVE port) or "dev:port".
core::Result<OpenDevice> openDevice(const VerbsOps& ops, const std::string& rdma_dev,
                                    int gid_index);

// What the peer's QP is connected to: exchanged through the bootstrap.
struct QpAddress {
  uint32_t qpn = 0;
  uint32_t psn = 0;  // 24 bits
  uint16_t lid = 0;
  uint8_t mtu = 0;  // ibv_mtu
  uint8_t global = 0;
  ibv_gid gid{};
};

// The QP's state as this side drove it; each step checks it starts from the state it needs, so
// an illegal transition is reported naming both states before the driver is asked.
class QpStateMachine {
 public:
  QpStateMachine(const VerbsOps& ops, ibv_qp* qp, const PortInfo& port, int peer)
      : ops_(&ops), qp_(qp), port_(&port), peer_(peer) {}
  core::Status toInit(int access);
  core::Status toRtr(const QpAddress& remote, ibv_mtu mtu);
  core::Status toRts(uint32_t psn);
  core::Status toError();
  ibv_qp_state state() const { return state_; }

 private:
  core::Status expect(ibv_qp_state from, const char* to) const;
  core::Status modify(ibv_qp_attr& attr, int mask, ibv_qp_state to, const char* name);
  const VerbsOps* ops_;
  ibv_qp* qp_;
  const PortInfo* port_;
  int peer_;
  ibv_qp_state state_ = IBV_QPS_RESET;
};

const char* qpStateName(ibv_qp_state s);
int mtuBytes(ibv_mtu m);

}  // namespace ccscope::transports::verbs
