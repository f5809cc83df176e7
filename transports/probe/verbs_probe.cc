// libibverbs' side of `ccscope info` and the RDMA layer: the devices it lists, and per port what
// sysfs does not show (active and maximum MTU, the speeds port_cap_flags2 advertises).
#include <fmt/format.h>
#include <infiniband/verbs.h>

#include <memory>

#include "transports/component_report.h"
#include "transports/probe/rdma_sysfs.h"

namespace ccscope::transports {

namespace {

struct DeviceListFree {
  void operator()(ibv_device** l) const { ibv_free_device_list(l); }
};
struct ContextClose {
  void operator()(ibv_context* c) const { ibv_close_device(c); }
};

std::optional<int> mtuBytes(ibv_mtu m) {
  if (m < IBV_MTU_256 || m > IBV_MTU_4096) return std::nullopt;
  return 128 << static_cast<int>(m);  // IBV_MTU_256 = 1
}

// ibv_port_attr.active_width and active_speed as the kernel encodes them (devinfo.c's tables).
std::optional<int> widthLanes(uint8_t w) {
  switch (w) {
    case 1:
      return 1;
    case 2:
      return 4;
    case 4:
      return 8;
    case 8:
      return 12;
    case 16:
      return 2;
    default:
      return std::nullopt;
  }
}

std::string speedName(uint8_t s) {
  static const char* kNames[] = {"SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR"};
  for (int bit = 0; bit < 8; ++bit)
    if (s == (1u << bit)) return kNames[bit];
  return "";
}

void applyPortAttr(const ibv_port_attr& a, RdmaPort& p) {
  p.verbs_read = true;
  p.active_mtu = mtuBytes(a.active_mtu);
  p.max_mtu = mtuBytes(a.max_mtu);
  if (auto w = widthLanes(a.active_width)) p.rate.width = w;
  if (std::string s = speedName(a.active_speed); !s.empty()) {
    p.rate.speed = s;
    p.rate.lane_gbps = laneGbps(s);
  }
  if (a.port_cap_flags2 & IBV_PORT_LINK_SPEED_NDR_SUP)
    p.speed_supported = "NDR";
  else if (a.port_cap_flags2 & IBV_PORT_LINK_SPEED_HDR_SUP)
    p.speed_supported = "HDR";
  p.width_2x_supported = (a.port_cap_flags2 & IBV_PORT_LINK_WIDTH_2X_SUP) != 0;
}

}  // namespace

ComponentReport probeVerbs() {
  ComponentReport r{"verbs", true, "libibverbs", {}, ""};
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n == 0) {
    r.note = "no RDMA device found (ibv_get_device_list returned none)";
  } else {
    for (int i = 0; i < n; ++i)
      r.devices.push_back(fmt::format("{} (guid {:#x})", ibv_get_device_name(list[i]),
                                      be64toh(ibv_get_device_guid(list[i]))));
  }
  if (list) ibv_free_device_list(list);
  return r;
}

void addVerbsReadings(RdmaSnapshot& s) {
  int n = 0;
  std::unique_ptr<ibv_device*, DeviceListFree> list(ibv_get_device_list(&n));
  if (!list || n == 0) {
    s.verbs_note = "ibv_get_device_list returned none: MTU unknown";
    return;
  }
  for (RdmaDevice& d : s.devices) {
    ibv_device* dev = nullptr;
    for (int i = 0; i < n && !dev; ++i)
      if (d.name == ibv_get_device_name(list.get()[i])) dev = list.get()[i];
    std::unique_ptr<ibv_context, ContextClose> ctx(dev ? ibv_open_device(dev) : nullptr);
    if (!ctx) {
      d.unknown.push_back(
          fmt::format("MTU ({})", dev ? "ibv_open_device failed" : "libibverbs does not list it"));
      continue;
    }
    for (RdmaPort& p : d.ports) {
      ibv_port_attr a{};
      if (ibv_query_port(ctx.get(), static_cast<uint8_t>(p.number), &a) == 0)
        applyPortAttr(a, p);
      else
        p.unknown.push_back("MTU (ibv_query_port failed)");
    }
  }
}

}  // namespace ccscope::transports
