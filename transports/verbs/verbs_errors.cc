#include "transports/verbs/verbs_errors.h"

#include <fmt/format.h>

#include <array>
#include <cstring>

#include "transports/common/pair_errors.h"

namespace ccscope::transports::verbs {

using core::Code;
using core::Layer;
using core::Status;

namespace {

// Indexed by ibv_wc_status (verbs.h order, IBV_WC_SUCCESS first).
constexpr std::array<WcStatusInfo, 24> kWcStatus{{
    {"IBV_WC_SUCCESS", "the work request completed"},
    {"IBV_WC_LOC_LEN_ERR", "a message was longer than the receive buffer posted for it"},
    {"IBV_WC_LOC_QP_OP_ERR", "the local QP rejected a work request (bad opcode or QP state)"},
    {"IBV_WC_LOC_EEC_OP_ERR", "local EE context error (RD only; should not happen on RC)"},
    {"IBV_WC_LOC_PROT_ERR",
     "a local buffer was not registered with this protection domain or its lkey is stale"},
    {"IBV_WC_WR_FLUSH_ERR",
     "the QP went to the error state and flushed this request; an earlier error is the cause"},
    {"IBV_WC_MW_BIND_ERR", "a memory window bind failed"},
    {"IBV_WC_BAD_RESP_ERR", "the remote side sent an unexpected transport response"},
    {"IBV_WC_LOC_ACCESS_ERR", "a local buffer lacks the access rights the request needs"},
    {"IBV_WC_REM_INV_REQ_ERR",
     "the remote side rejected the request (too long for its receive, or an invalid opcode)"},
    {"IBV_WC_REM_ACCESS_ERR",
     "the remote side refused the RDMA access: its rkey or address range is wrong or was "
     "deregistered"},
    {"IBV_WC_REM_OP_ERR", "the remote side could not complete the operation (its QP failed)"},
    {"IBV_WC_RETRY_EXC_ERR",
     "the remote port is down or unreachable; check `ibstat` there and the fabric path"},
    {"IBV_WC_RNR_RETRY_EXC_ERR",
     "the remote side had no receive posted for too long (receiver not ready); is it alive and "
     "progressing?"},
    {"IBV_WC_LOC_RDD_VIOL_ERR", "local RD domain violation (RD only)"},
    {"IBV_WC_REM_INV_RD_REQ_ERR", "the remote side received an invalid RD request"},
    {"IBV_WC_REM_ABORT_ERR", "the remote side aborted the operation"},
    {"IBV_WC_INV_EECN_ERR", "invalid EE context number (RD only)"},
    {"IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state (RD only)"},
    {"IBV_WC_FATAL_ERR", "the adapter hit a fatal error; check `dmesg` and the device's health"},
    {"IBV_WC_RESP_TIMEOUT_ERR", "the remote side did not respond in time"},
    {"IBV_WC_GENERAL_ERR", "the adapter reported a general error; check `dmesg`"},
    {"IBV_WC_TM_ERR", "tag matching offload error (not used by this transport)"},
    {"IBV_WC_TM_RNDV_INCOMPLETE",
     "tag matching rendezvous incomplete (not used by this transport)"},
}};

Code wcCode(int status) {
  switch (status) {
    case IBV_WC_WR_FLUSH_ERR:
      return Code::kAborted;
    case IBV_WC_LOC_LEN_ERR:
    case IBV_WC_LOC_QP_OP_ERR:
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
      return Code::kInternal;
    case IBV_WC_FATAL_ERR:
    case IBV_WC_GENERAL_ERR:
      return Code::kSystem;
    default:
      return Code::kRemoteError;
  }
}

const char* errnoHint(int err) {
  switch (err) {
    case ENOMEM:
      return "; out of memory or locked-memory limit: check `ulimit -l` (memlock)";
    case EPERM:
    case EACCES:
      return "; not permitted: check access to /dev/infiniband/uverbs*";
    case EINVAL:
      return "; the driver refused the arguments";
    case ENODEV:
      return "; the device went away";
    default:
      return "";
  }
}

}  // namespace

WcStatusInfo wcStatusInfo(int status) {
  if (status >= 0 && static_cast<size_t>(status) < kWcStatus.size()) return kWcStatus[status];
  return {"IBV_WC_(unknown)", "the adapter returned a status this build does not know"};
}

Status wcError(int status, uint32_t vendor_err, int peer, const std::string& dev) {
  const WcStatusInfo i = wcStatusInfo(status);
  return Status(wcCode(status), fmt::format("{} from peer r{} on {}: {} (vendor error {:#x})",
                                            i.name, peer, dev, i.advice, vendor_err))
      .withLayer(Layer::kRdma)
      .withPeer(peer)
      .withNative("ibv_poll_cq", status);
}

Status callError(const char* call, int err, const std::string& dev, int peer) {
  std::string who = peer >= 0 ? fmt::format(" for the QP to rank {}", peer) : "";
  Status s(Code::kSystem, fmt::format("{}{} on {} failed: {}{}", call, who, dev, std::strerror(err),
                                      errnoHint(err)));
  s.withLayer(Layer::kRdma).withNative(call, err);
  if (peer >= 0) s.withPeer(peer);
  return s;
}

const char* asyncEventName(ibv_event_type type) {
  switch (type) {
    case IBV_EVENT_QP_FATAL:
      return "IBV_EVENT_QP_FATAL";
    case IBV_EVENT_QP_REQ_ERR:
      return "IBV_EVENT_QP_REQ_ERR";
    case IBV_EVENT_QP_ACCESS_ERR:
      return "IBV_EVENT_QP_ACCESS_ERR";
    case IBV_EVENT_CQ_ERR:
      return "IBV_EVENT_CQ_ERR";
    case IBV_EVENT_DEVICE_FATAL:
      return "IBV_EVENT_DEVICE_FATAL";
    case IBV_EVENT_PORT_ERR:
      return "IBV_EVENT_PORT_ERR";
    case IBV_EVENT_GID_CHANGE:
      return "IBV_EVENT_GID_CHANGE";
    case IBV_EVENT_LID_CHANGE:
      return "IBV_EVENT_LID_CHANGE";
    default:
      return "IBV_EVENT_(other)";
  }
}

Status asyncError(ibv_event_type type, const std::string& dev, int peer) {
  const char* what = "";
  switch (type) {
    case IBV_EVENT_PORT_ERR:
      what = "the port went down; check the link with `ibstat`";
      break;
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_LID_CHANGE:
      what = "the port's address changed under connected QPs (interface address or SM change)";
      break;
    case IBV_EVENT_DEVICE_FATAL:
      what = "the adapter failed; check `dmesg`";
      break;
    case IBV_EVENT_CQ_ERR:
      what = "the completion queue overran";
      break;
    default:
      what = "the QP to this peer entered the error state";
      break;
  }
  Status s(Code::kRemoteError,
           fmt::format("async event {} on {}: {}", asyncEventName(type), dev, what));
  s.withLayer(Layer::kRdma).withNative("ibv_get_async_event", type);
  if (peer >= 0) s.withPeer(peer);
  return s;
}

Status tagMismatch(int receiver, int sender, uint32_t expected, uint32_t got) {
  return tagMismatchStatus(receiver, sender, expected, got);
}

Status tooLong(int receiver, int sender, uint64_t sent, uint64_t room) {
  return tooLongStatus(receiver, sender, sent, room);
}

Status noDevice() {
  return Status(Code::kUnavailable,
                "no RDMA device: ibv_get_device_list found none (is the driver loaded? "
                "`ibv_devices`)")
      .withLayer(Layer::kRdma)
      .withNative("ibv_get_device_list", 0);
}

}  // namespace ccscope::transports::verbs
