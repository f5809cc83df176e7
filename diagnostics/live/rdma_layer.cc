#include "diagnostics/live/rdma_layer.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/units.h"

namespace ccscope::diagnostics {

using core::Layer;
using nlohmann::json;
using transports::RdmaDevice;
using transports::RdmaPort;
using transports::RdmaSnapshot;

namespace {

constexpr size_t kMaxRdmaUnknownNamed = 6;

bool isUp(const RdmaPort& p) {
  return p.state == transports::kPortActive && p.phys_state == transports::kPhysLinkUp;
}

// Ports that show what `p` could reach: up, same link layer, this device or the same HCA type.
bool comparable(const RdmaDevice& d, const RdmaDevice& other, const RdmaPort& p,
                const RdmaPort& q) {
  if (&p == &q || !isUp(q) || q.link_layer != p.link_layer || p.link_layer.empty()) return false;
  return &d == &other || (!d.hca_type.empty() && d.hca_type == other.hca_type);
}

void judgeState(const RdmaDevice& d, const RdmaPort& p, std::vector<RdmaFinding>& out) {
  bool state_bad = p.state && *p.state != transports::kPortActive;
  bool phys_bad = p.phys_state && *p.phys_state != transports::kPhysLinkUp;
  if (!state_bad && !phys_bad) return;
  std::string what = fmt::format("port {} (physical state {})", p.state ? p.state_name : "?",
                                 p.phys_state ? p.phys_state_name : "?");
  std::string check;
  if (phys_bad)
    check = fmt::format(
        "no physical link: check the cable and transceiver, the switch port, and `ibstat {} {}`",
        d.name, p.number);
  else if (p.link_layer == "InfiniBand")
    check = fmt::format(
        "the link is up but no subnet manager activated the port: check that an SM runs on this "
        "fabric (`sminfo`, `ibstat {} {}`)",
        d.name, p.number);
  else
    check = fmt::format("the link is up but the port is not active: `ibstat {} {}`, the netdev",
                        d.name, p.number);
  out.push_back({RdmaSeverity::kFault, portLabel(d, p), fmt::format("{}: {}", what, check)});
}

void judgeLink(const RdmaSnapshot& s, const RdmaDevice& d, const RdmaPort& p, RdmaJudgement& out) {
  PortLimits lim = portLimits(s, d, p);
  std::string where = portLabel(d, p);
  if (!p.rate.width) {
    out.unknown.push_back(fmt::format("{}: width (rate '{}' not understood)", where, p.rate_text));
  } else if (!lim.max_width) {
    out.unknown.push_back(fmt::format("{}: max width (no other active {} port of {} to compare)",
                                      where, p.link_layer,
                                      d.hca_type.empty() ? d.name : d.hca_type));
  } else if (*p.rate.width < *lim.max_width) {
    // Ethernet ports of one model may run different lane counts on purpose (breakout cables).
    bool ib = p.link_layer == "InfiniBand";
    out.findings.push_back(
        {ib ? RdmaSeverity::kFault : RdmaSeverity::kWarning, where,
         fmt::format("degraded link: {}X of {}X ({} runs {}X): lanes lost; reseat or replace the "
                     "cable, check the switch port (`ibstat {} {}`)",
                     *p.rate.width, *lim.max_width, lim.width_from, *lim.max_width, d.name,
                     p.number)});
  }
  auto lane = p.rate.lane_gbps, best = transports::laneGbps(lim.max_speed);
  if (lane && best && *lane < *best)
    out.findings.push_back(
        {RdmaSeverity::kWarning, where,
         fmt::format("speed {} of {} ({}): the link trained below its fastest speed; check the "
                     "cable's rating and the switch port's speed",
                     p.rate.speed, lim.max_speed, lim.speed_from)});
}

void judgeCounters(const RdmaDevice& d, const RdmaPort& p, std::vector<RdmaFinding>& out) {
  std::vector<std::string> nonzero;
  for (const std::string& name : watchedErrorCounters()) {
    auto it = p.counters.find(name);
    if (it != p.counters.end() && it->second > 0)
      nonzero.push_back(fmt::format("{} {}", name, it->second));
  }
  if (nonzero.empty()) return;
  out.push_back({RdmaSeverity::kWarning, portLabel(d, p),
                 fmt::format("error counters nonzero since boot or the last reset: {} (a count "
                             "that rises under load points at the cable or transceiver)",
                             fmt::join(nonzero, ", "))});
}

void judgeRoce(const RdmaDevice& d, const RdmaPort& p, RdmaJudgement& out) {
  if (p.link_layer != "Ethernet") return;
  std::string where = portLabel(d, p);
  if (p.gids.empty()) {
    out.findings.push_back({RdmaSeverity::kWarning, where,
                            "no GID entry: the port's netdev has no address, so RoCE has no "
                            "source GID (assign an IP address to the netdev)"});
    return;
  }
  if (!roceV2GidIndices(p).empty()) return;
  std::vector<std::string> v1;
  for (const auto& g : p.gids) {
    if (g.type.empty()) {
      out.unknown.push_back(where + ": GID types (gid_attrs/types unreadable)");
      return;
    }
    v1.push_back(std::to_string(g.index));
  }
  out.findings.push_back(
      {RdmaSeverity::kWarning, where,
       fmt::format("no RoCE v2 GID (GID index {} IB/RoCE v1 only): routed RoCE and the "
                   "NCCL_IB_GID_INDEX/UCX_IB_GID_INDEX a job picks need a RoCE v2 entry; check "
                   "the netdev's IP address and the kernel's RoCE v2 support",
                   fmt::join(v1, ", "))});
}

void judgeMemlock(const RdmaSnapshot& s, std::vector<RdmaFinding>& out) {
  if (!s.memlock_bytes || *s.memlock_bytes < 0 || *s.memlock_bytes >= transports::kMinMemlockBytes)
    return;
  if (s.cap_ipc_lock.value_or(false)) return;  // CAP_IPC_LOCK: the limit does not apply
  out.push_back(
      {RdmaSeverity::kWarning, "host",
       fmt::format("locked-memory limit {} is below {}: registering collective buffers "
                   "(ibv_reg_mr) fails with ENOMEM; raise `ulimit -l` (limits.conf `* - memlock "
                   "unlimited`, systemd LimitMEMLOCK=infinity, docker --ulimit memlock=-1)",
                   core::formatBytes(static_cast<uint64_t>(*s.memlock_bytes)),
                   core::formatBytes(transports::kMinMemlockBytes))});
}

}  // namespace

const std::vector<std::string>& watchedErrorCounters() {
  static const std::vector<std::string> kNames = {"link_downed", "symbol_error", "port_rcv_errors",
                                                  "link_error_recovery",
                                                  "excessive_buffer_overrun_errors"};
  return kNames;
}

PortLimits portLimits(const RdmaSnapshot& s, const RdmaDevice& d, const RdmaPort& p) {
  PortLimits lim;
  auto consider = [&](const RdmaDevice& od, const RdmaPort& q) {
    if (!comparable(d, od, p, q)) return;
    if (q.rate.width && (!lim.max_width || *q.rate.width > *lim.max_width)) {
      lim.max_width = q.rate.width;
      lim.width_from = portLabel(od, q);
    }
    auto lane = q.rate.lane_gbps, best = transports::laneGbps(lim.max_speed);
    if (lane && (!best || *lane > *best)) {
      lim.max_speed = q.rate.speed;
      lim.speed_from = portLabel(od, q);
    }
  };
  for (const RdmaPort& q : d.ports) consider(d, q);  // this device's own ports name it first
  for (const RdmaDevice& od : s.devices)
    if (&od != &d)
      for (const RdmaPort& q : od.ports) consider(od, q);
  auto sup = transports::laneGbps(p.speed_supported), best = transports::laneGbps(lim.max_speed);
  if (sup && (!best || *sup > *best)) {
    lim.max_speed = p.speed_supported;
    lim.speed_from = "port_cap_flags2";
  }
  // Where the port itself is the widest or fastest, that is its maximum.
  if (lim.max_width && p.rate.width && *p.rate.width >= *lim.max_width) {
    lim.max_width = p.rate.width;
    lim.width_from = "itself";
  }
  best = transports::laneGbps(lim.max_speed);
  if (best && p.rate.lane_gbps && *p.rate.lane_gbps >= *best) {
    lim.max_speed = p.rate.speed;
    lim.speed_from = "itself";
  }
  return lim;
}

std::vector<int> roceV2GidIndices(const RdmaPort& p) {
  std::vector<int> out;
  for (const auto& g : p.gids)
    if (g.type == "RoCE v2") out.push_back(g.index);
  return out;
}

RdmaJudgement judgeRdma(const RdmaSnapshot& s) {
  RdmaJudgement j;
  for (const RdmaDevice& d : s.devices) {
    for (const auto& u : d.unknown) j.unknown.push_back(d.name + ": " + u);
    for (const RdmaPort& p : d.ports) {
      for (const auto& u : p.unknown) j.unknown.push_back(portLabel(d, p) + ": " + u);
      judgeState(d, p, j.findings);
      if (isUp(p)) {
        judgeLink(s, d, p, j);
        judgeRoce(d, p, j);
      }
      judgeCounters(d, p, j.findings);
    }
  }
  if (!s.devices.empty()) judgeMemlock(s, j.findings);
  std::stable_partition(j.findings.begin(), j.findings.end(),
                        [](const RdmaFinding& f) { return f.severity == RdmaSeverity::kFault; });
  return j;
}

namespace {

// Every rank's report, each host's devices and findings once (ranks on one host read the same
// sysfs).
struct RdmaTally {
  std::set<std::string> devices, lines, unknown;
  size_t ports = 0, up = 0;
  std::vector<std::string> faults, warnings;
  void add(const json& j, int rank, const std::vector<std::string>& hosts, ProbeResult& r) {
    if (!j.is_object()) return;
    const std::string& host = hostOf(rank, hosts);
    for (const json& d : j.value("devices", json::array())) {
      if (!devices.insert(host + "|" + d.value("name", std::string())).second) continue;
      for (const json& p : d.value("ports", json::array())) {
        ++ports;
        up += p.value("state", json()) == transports::kPortActive &&
              p.value("phys_state", json()) == transports::kPhysLinkUp;
      }
    }
    for (const json& f : j.value("findings", json::array())) {
      std::string where = f.value("where", std::string()), text = f.value("text", std::string());
      if (!lines.insert(fmt::format("{}|{}|{}", host, where, text)).second) continue;
      bool is_fault = f.value("severity", std::string()) == "fault";
      std::string line = where == "host"
                             ? fmt::format("{}: {}", rankLabel(rank, hosts), text)
                             : fmt::format("{}: {}: {}", rankLabel(rank, hosts), where, text);
      (is_fault ? faults : warnings).push_back(line);
      if (!is_fault) continue;
      r.culprit.ranks.push_back(rank);
      if (host != "?") r.culprit.hosts.push_back(host);
    }
    for (const json& u : j.value("unknown", json::array())) {
      std::string name = u.get<std::string>();
      size_t colon = name.find(": ");
      if (colon != std::string::npos) name.erase(0, colon + 2);  // "mlx5_0:1: " off
      unknown.insert(name.substr(0, name.find(" (")));
    }
  }
};

}  // namespace

ProbeResult judgeRdmaLayer(const std::vector<json>& per_rank,
                           const std::vector<std::string>& hosts) {
  ProbeResult r{Layer::kRdma, "rdma devices", ProbeOutcome::kSkip, "", {}, {}, {}};
  RdmaTally t;
  for (size_t k = 0; k < per_rank.size(); ++k) t.add(per_rank[k], static_cast<int>(k), hosts, r);
  if (t.devices.empty()) {
    r.detail = "skipped: no RDMA device";
    return r;
  }
  if (!applyFindings(
          r, t.faults, t.warnings,
          "Check the named port (`ibstat <device> <port>`, the cable and transceiver, the switch "
          "port, the subnet manager), or leave it out of the job (NCCL_IB_HCA, UCX_NET_DEVICES); "
          "then rerun ccscope diagnose.")) {
    r.outcome = ProbeOutcome::kPass;
    r.detail = fmt::format(
        "{} device(s), {} of {} port(s) ACTIVE and LinkUp; no degraded link "
        "or error counter",
        t.devices.size(), t.up, t.ports);
  }
  if (!t.unknown.empty()) {
    std::vector<std::string> names(t.unknown.begin(), t.unknown.end());
    if (names.size() > kMaxRdmaUnknownNamed) {
      names.resize(kMaxRdmaUnknownNamed);
      names.push_back("...");
    }
    r.detail += fmt::format("; unknown: {}", fmt::join(names, ", "));
  }
  return r;
}

}  // namespace ccscope::diagnostics
