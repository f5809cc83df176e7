// The RDMA layer as `ccscope info` prints it (text, and the JSON that `info --json` prints and a
// `diagnose` rank posts): one block per device and port, "?" for a reading nobody could take
// (listed again under "unknown" with the reason), then the findings.
#include <fmt/format.h>

#include "core/units.h"
#include "diagnostics/live/optional_text.h"
#include "diagnostics/live/rdma_layer.h"

namespace ccscope::diagnostics {

using nlohmann::json;
using transports::RdmaDevice;
using transports::RdmaPort;
using transports::RdmaSnapshot;

namespace {

std::string orQuestion(const std::string& s) { return s.empty() ? "?" : s; }

const char* severityName(RdmaSeverity s) { return s == RdmaSeverity::kFault ? "fault" : "warning"; }

json portJson(const RdmaSnapshot& s, const RdmaDevice& d, const RdmaPort& p) {
  PortLimits lim = portLimits(s, d, p);
  json gids = json::array();
  for (const auto& g : p.gids)
    gids.push_back({{"index", g.index}, {"gid", g.gid}, {"type", g.type}, {"ndev", g.ndev}});
  return {{"port", p.number},
          {"state", orNull(p.state)},
          {"state_name", p.state_name},
          {"phys_state", orNull(p.phys_state)},
          {"phys_state_name", p.phys_state_name},
          {"link_layer", p.link_layer},
          {"rate", p.rate_text},
          {"width", orNull(p.rate.width)},
          {"speed", p.rate.speed},
          {"max_width", orNull(lim.max_width)},
          {"max_width_from", lim.width_from},
          {"max_speed", lim.max_speed},
          {"max_speed_from", lim.speed_from},
          {"lid", orNull(p.lid)},
          {"sm_lid", orNull(p.sm_lid)},
          {"active_mtu", orNull(p.active_mtu)},
          {"max_mtu", orNull(p.max_mtu)},
          {"netdev_mtu", orNull(p.netdev_mtu)},
          {"gids", gids},
          {"roce_v2_gid_indices", roceV2GidIndices(p)},
          {"counters", p.counters},
          {"hw_counters", p.hw_counters},
          {"unknown", p.unknown}};
}

std::string memlockText(const RdmaSnapshot& s) {
  if (!s.memlock_bytes) return "locked-memory limit ? (getrlimit failed)";
  std::string v = *s.memlock_bytes < 0 ? "unlimited"
                                       : core::formatBytes(static_cast<uint64_t>(*s.memlock_bytes));
  return fmt::format("locked-memory limit {}{}", v,
                     s.cap_ipc_lock.value_or(false) ? " (CAP_IPC_LOCK: not enforced)" : "");
}

std::string hexOrQuestion(const std::optional<unsigned>& v) {
  return v ? fmt::format("{:#x}", *v) : "?";
}

// "MTU 4096 (max 4096)"; on RoCE the netdev's MTU bounds it, so it is shown too.
std::string mtuText(const RdmaPort& p) {
  std::string t = fmt::format("MTU {} (max {})", show(p.active_mtu), show(p.max_mtu));
  if (p.netdev_mtu) t += fmt::format(", netdev MTU {}", *p.netdev_mtu);
  return t;
}

std::string nonzero(const std::map<std::string, uint64_t>& counters) {
  std::vector<std::string> v;
  for (const auto& [name, value] : counters)
    if (value > 0) v.push_back(fmt::format("{} {}", name, value));
  return fmt::format("{}", fmt::join(v, ", "));
}

// "max 4X NDR", "max ? EDR", "max unknown".
std::string maxText(const PortLimits& lim) {
  if (!lim.max_width && lim.max_speed.empty()) return "max unknown";
  return fmt::format("max {} {}", lim.max_width ? fmt::format("{}X", *lim.max_width) : "?",
                     orQuestion(lim.max_speed));
}

void portLines(const RdmaSnapshot& s, const RdmaDevice& d, const RdmaPort& p,
               std::vector<std::string>& out) {
  std::string rate = !p.rate_text.empty()
                         ? p.rate_text
                         : fmt::format("{}X {}", show(p.rate.width), orQuestion(p.rate.speed));
  out.push_back(fmt::format("    port {}: {}, {}, {}, {}, {}, {}, lid {}, SM lid {}", p.number,
                            orQuestion(p.state_name), orQuestion(p.phys_state_name),
                            orQuestion(p.link_layer), rate, maxText(portLimits(s, d, p)),
                            mtuText(p), hexOrQuestion(p.lid), hexOrQuestion(p.sm_lid)));
  for (const auto& g : p.gids)
    out.push_back(fmt::format("      GID {}: {} ({}{})", g.index, g.gid, orQuestion(g.type),
                              g.ndev.empty() ? "" : ", " + g.ndev));
  std::string c = nonzero(p.counters), hw = nonzero(p.hw_counters);
  if (!c.empty()) out.push_back("      nonzero counters: " + c);
  if (!hw.empty()) out.push_back("      nonzero hw_counters: " + hw);
}

}  // namespace

json rdmaReportJson(const RdmaSnapshot& s) {
  RdmaJudgement jd = judgeRdma(s);
  json j = {{"root", s.root},
            {"class_dir", s.class_dir},
            {"memlock_bytes", orNull(s.memlock_bytes)},
            {"cap_ipc_lock", orNull(s.cap_ipc_lock)},
            {"verbs_compiled", s.verbs_compiled},
            {"verbs_note", s.verbs_note},
            {"devices", json::array()},
            {"findings", json::array()},
            {"unknown", jd.unknown}};
  for (const RdmaDevice& d : s.devices) {
    json ports = json::array();
    for (const RdmaPort& p : d.ports) ports.push_back(portJson(s, d, p));
    j["devices"].push_back({{"name", d.name},
                            {"node_type", d.node_type},
                            {"fw_ver", d.fw_ver},
                            {"node_guid", d.node_guid},
                            {"hca_type", d.hca_type},
                            {"board_id", d.board_id},
                            {"ports", ports},
                            {"unknown", d.unknown}});
  }
  for (const auto& f : jd.findings)
    j["findings"].push_back(
        {{"severity", severityName(f.severity)}, {"where", f.where}, {"text", f.text}});
  return j;
}

std::vector<std::string> rdmaReportText(const RdmaSnapshot& s) {
  std::string cls = s.root + "/class/infiniband";
  if (s.devices.empty())
    return {fmt::format("rdma: no RDMA device ({})", s.class_dir ? cls + " is empty" : "no " + cls),
            "  " + memlockText(s)};
  std::vector<std::string> out;
  out.push_back(fmt::format("rdma layer: {} device(s) under {}; {}; {}", s.devices.size(), cls,
                            memlockText(s),
                            s.verbs_note.empty() ? "MTU from libibverbs" : s.verbs_note));
  for (const RdmaDevice& d : s.devices) {
    out.push_back(fmt::format("  {} ({}, {}, firmware {}, board {}, node guid {})", d.name,
                              orQuestion(d.node_type), orQuestion(d.hca_type), orQuestion(d.fw_ver),
                              orQuestion(d.board_id), orQuestion(d.node_guid)));
    for (const RdmaPort& p : d.ports) portLines(s, d, p, out);
  }
  RdmaJudgement jd = judgeRdma(s);
  for (const auto& f : jd.findings)
    out.push_back(fmt::format(
        "  {} {}: {}", f.severity == RdmaSeverity::kFault ? "FAULT" : "WARNING", f.where, f.text));
  for (const auto& u : jd.unknown) out.push_back("  unknown: " + u);
  return out;
}

}  // namespace ccscope::diagnostics
