#include "transports/verbs/verbs_device.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "transports/verbs/verbs_errors.h"

namespace ccscope::transports::verbs {

using core::Code;
using core::Layer;
using core::Status;

namespace {

constexpr uint8_t kRdmaSl = 0;
// rc_pingpong's values: ~67 ms local ACK timeout (4.096 us * 2^14), 7 retries, infinite RNR
// retries (7), a 12 (0.64 ms) minimum RNR NAK timer, one outstanding RDMA read each way.
constexpr uint8_t kAckTimeout = 14;
constexpr uint8_t kRetryCount = 7;
constexpr uint8_t kRnrRetry = 7;
constexpr uint8_t kMinRnrTimer = 12;
constexpr uint8_t kRdAtomic = 1;
constexpr uint8_t kHopLimit = 1;

const char* portStateName(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_DOWN:
      return "DOWN";
    case IBV_PORT_INIT:
      return "INIT";
    case IBV_PORT_ARMED:
      return "ARMED";
    case IBV_PORT_ACTIVE:
      return "ACTIVE";
    default:
      return "not ACTIVE";
  }
}

bool zeroGid(const ibv_gid& g) {
  for (uint8_t b : g.raw)
    if (b) return false;
  return true;
}

// The GID a RoCE QP sources its packets from: the override, or the first non-zero RoCE v2 entry.
Status findGid(const VerbsOps& ops, ibv_context* ctx, PortInfo& p, int override_index) {
  if (override_index >= 0) {
    ibv_gid_entry e{};
    if (int err = ops.query_gid_ex(ctx, p.port, override_index, &e); err != 0 || zeroGid(e.gid))
      return Status(Code::kInvalidArgument,
                    fmt::format("--gid-index {} on {} is not a valid GID entry", override_index,
                                p.name))
          .withLayer(Layer::kRdma)
          .withNative("ibv_query_gid_ex", err);
    p.gid_index = override_index;
    p.gid = e.gid;
    return Status::ok();
  }
  if (!p.roce()) return Status::ok();  // InfiniBand routes by LID inside a subnet
  for (int i = 0; i < p.attr.gid_tbl_len; ++i) {
    ibv_gid_entry e{};
    if (ops.query_gid_ex(ctx, p.port, i, &e) != 0) continue;
    if (e.gid_type != IBV_GID_TYPE_ROCE_V2 || zeroGid(e.gid)) continue;
    p.gid_index = i;
    p.gid = e.gid;
    return Status::ok();
  }
  return Status(Code::kUnavailable,
                fmt::format("{} is RoCE but has no RoCE v2 GID with an address (is an IP "
                            "address configured on its netdev? `show_gids`); pass --gid-index",
                            p.name))
      .withLayer(Layer::kRdma);
}

// Checks the port a QP will use: ACTIVE, a usable MTU, a LID on InfiniBand.
Status checkPort(const PortInfo& p) {
  if (p.attr.state != IBV_PORT_ACTIVE)
    return Status(Code::kUnavailable,
                  fmt::format("RDMA port {} is {} (not ACTIVE): check the link with `ibstat`",
                              p.name, portStateName(p.attr.state)))
        .withLayer(Layer::kRdma)
        .withNative("ibv_query_port", p.attr.state);
  if (mtuBytes(p.attr.active_mtu) == 0)
    return Status(Code::kUnavailable, fmt::format("RDMA port {} reports no active MTU", p.name))
        .withLayer(Layer::kRdma);
  if (!p.roce() && p.attr.lid == 0)
    return Status(Code::kUnavailable,
                  fmt::format("InfiniBand port {} has no LID: is a subnet manager running? "
                              "(`sminfo`)",
                              p.name))
        .withLayer(Layer::kRdma);
  return Status::ok();
}

struct Wanted {
  std::string dev;  // "" = any
  int port = 0;     // 0 = any
};

Wanted parseWanted(const std::string& s) {
  Wanted w;
  const size_t colon = s.rfind(':');
  w.dev = s.substr(0, colon);
  if (colon != std::string::npos) w.port = std::atoi(s.c_str() + colon + 1);
  return w;
}

// Tries the ports of one open device; OK with `out` filled at the first ACTIVE one (or the named
// one, ACTIVE or not, whose check then says why not).
Status pickPort(const VerbsOps& ops, ibv_context* ctx, const std::string& dev, const Wanted& w,
                PortInfo& out, std::vector<std::string>& seen) {
  ibv_device_attr da{};
  if (int err = ops.query_device(ctx, &da); err != 0)
    return callError("ibv_query_device", err, dev);
  for (int p = 1; p <= da.phys_port_cnt; ++p) {
    if (w.port != 0 && p != w.port) continue;
    PortInfo info;
    info.name = fmt::format("{}:{}", dev, p);
    info.port = static_cast<uint8_t>(p);
    if (int err = ops.query_port(ctx, info.port, &info.attr); err != 0)
      return callError("ibv_query_port", err, info.name);
    seen.push_back(fmt::format("{} {}", info.name, portStateName(info.attr.state)));
    if (w.port != 0 || info.attr.state == IBV_PORT_ACTIVE) {
      out = info;
      return checkPort(out);
    }
  }
  if (w.port != 0)
    return Status(Code::kInvalidArgument,
                  fmt::format("--rdma-dev {}:{}: the device has {} port(s)", dev, w.port,
                              static_cast<int>(da.phys_port_cnt)))
        .withLayer(Layer::kRdma);
  return Status(Code::kUnavailable, "no ACTIVE port").withLayer(Layer::kRdma);
}

}  // namespace

OpenDevice& OpenDevice::operator=(OpenDevice&& o) noexcept {
  std::swap(ops, o.ops);
  std::swap(ctx, o.ctx);
  std::swap(port, o.port);
  return *this;
}

OpenDevice::~OpenDevice() {
  if (ctx) ops->close_device(ctx);
}

core::Result<OpenDevice> openDevice(const VerbsOps& ops, const std::string& rdma_dev,
                                    int gid_index) {
  int n = 0;
  ibv_device** list = ops.get_device_list(&n);
  if (!list || n == 0) {
    if (list) ops.free_device_list(list);
    return noDevice();
  }
  const Wanted w = parseWanted(rdma_dev);
  std::vector<std::string> seen;
  Status last = Status::ok();
  for (int i = 0; i < n; ++i) {
    const std::string dev = ops.get_device_name(list[i]);
    seen.push_back(dev);
    if (!w.dev.empty() && dev != w.dev) continue;
    OpenDevice d;
    d.ops = &ops;
    d.ctx = ops.open_device(list[i]);
    if (!d.ctx) {
      last = callError("ibv_open_device", errno, dev);
      if (!w.dev.empty()) break;
      continue;
    }
    last = pickPort(ops, d.ctx, dev, w, d.port, seen);
    if (last.isOk()) last = findGid(ops, d.ctx, d.port, gid_index);
    if (last.isOk()) {
      ops.free_device_list(list);
      return d;
    }
    if (!w.dev.empty()) break;
  }
  ops.free_device_list(list);
  if (!last.isOk() && !w.dev.empty()) return last;
  if (!w.dev.empty() && last.isOk())
    return Status(Code::kInvalidArgument, fmt::format("--rdma-dev {}: no such device (found: {})",
                                                      rdma_dev, fmt::join(seen, ", ")))
        .withLayer(Layer::kRdma);
  return Status(Code::kUnavailable, fmt::format("no ACTIVE RDMA port (seen: {}); check `ibstat`",
                                                fmt::join(seen, ", ")))
      .withLayer(Layer::kRdma);
}

const char* qpStateName(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET:
      return "RESET";
    case IBV_QPS_INIT:
      return "INIT";
    case IBV_QPS_RTR:
      return "RTR";
    case IBV_QPS_RTS:
      return "RTS";
    case IBV_QPS_ERR:
      return "ERR";
    default:
      return "another state";
  }
}

int mtuBytes(ibv_mtu m) {
  return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << static_cast<int>(m) : 0;
}

Status QpStateMachine::expect(ibv_qp_state from, const char* to) const {
  if (state_ == from) return Status::ok();
  return Status(Code::kInternal,
                fmt::format("QP to rank {} on {} is in {}; {} needs {}", peer_, port_->name,
                            qpStateName(state_), to, qpStateName(from)))
      .withLayer(Layer::kRdma)
      .withPeer(peer_)
      .withNative(fmt::format("ibv_modify_qp({})", to), EINVAL);
}

Status QpStateMachine::modify(ibv_qp_attr& attr, int mask, ibv_qp_state to, const char* name) {
  attr.qp_state = to;
  if (int err = ops_->modify_qp(qp_, &attr, IBV_QP_STATE | mask); err != 0) {
    Status s = callError("ibv_modify_qp", err, port_->name, peer_);
    s.withNative(fmt::format("ibv_modify_qp({})", name), err);
    return s.prepend(fmt::format("moving the QP from {} to {}", qpStateName(state_), name));
  }
  state_ = to;
  return Status::ok();
}

Status QpStateMachine::toInit(int access) {
  CCSCOPE_RETURN_IF_ERROR(expect(IBV_QPS_RESET, "INIT"));
  ibv_qp_attr a{};
  a.pkey_index = 0;
  a.port_num = port_->port;
  a.qp_access_flags = static_cast<unsigned>(access);
  return modify(a, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, IBV_QPS_INIT, "INIT");
}

Status QpStateMachine::toRtr(const QpAddress& remote, ibv_mtu mtu) {
  CCSCOPE_RETURN_IF_ERROR(expect(IBV_QPS_INIT, "RTR"));
  ibv_qp_attr a{};
  a.path_mtu = mtu;
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = kRdAtomic;
  a.min_rnr_timer = kMinRnrTimer;
  a.ah_attr.dlid = remote.lid;
  a.ah_attr.sl = kRdmaSl;
  a.ah_attr.port_num = port_->port;
  if (remote.global && port_->gid_index >= 0) {
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.hop_limit = kHopLimit;
    a.ah_attr.grh.dgid = remote.gid;
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(port_->gid_index);
  }
  return modify(a,
                IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                IBV_QPS_RTR, "RTR");
}

Status QpStateMachine::toRts(uint32_t psn) {
  CCSCOPE_RETURN_IF_ERROR(expect(IBV_QPS_RTR, "RTS"));
  ibv_qp_attr a{};
  a.timeout = kAckTimeout;
  a.retry_cnt = kRetryCount;
  a.rnr_retry = kRnrRetry;
  a.sq_psn = psn;
  a.max_rd_atomic = kRdAtomic;
  return modify(a,
                IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                    IBV_QP_MAX_QP_RD_ATOMIC,
                IBV_QPS_RTS, "RTS");
}

Status QpStateMachine::toError() {
  if (state_ == IBV_QPS_ERR || state_ == IBV_QPS_RESET) return Status::ok();
  ibv_qp_attr a{};
  return modify(a, 0, IBV_QPS_ERR, "ERR");
}

}  // namespace ccscope::transports::verbs
