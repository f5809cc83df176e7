// RDMA devices and ports as the kernel shows them under <root>/class/infiniband (root is "/sys"
// on a host; tests point it at a recorded tree), with libibverbs' view of each port's MTU and
// supported speeds laid over it where a device can be opened. Every reading is optional: a file
// that is missing or cannot be read (a counter without a PMA, an empty GID entry's type) stays
// unknown and is never taken as healthy. Formats follow drivers/infiniband/core/sysfs.c.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ccscope::transports {

// The kernel's port states ("4: ACTIVE") and physical states ("5: LinkUp").
inline constexpr int kPortActive = 4;
inline constexpr int kPhysLinkUp = 5;
// A registration of a collective's buffers needs at least this much lockable memory.
inline constexpr int64_t kMinMemlockBytes = int64_t{64} << 20;

// "100 Gb/sec (4X EDR)": lanes, the speed's name and the data rate.
struct RdmaRate {
  std::optional<int> width;          // 1, 2, 4, 8, 12 lanes
  std::string speed;                 // "SDR" (also when the kernel prints none), "EDR", "NDR"...
  std::optional<double> lane_gbps;   // signalling per lane the speed implies: EDR 25, NDR 100
  std::optional<double> total_gbps;  // the number the kernel printed
};
// Parses a `rate` file; fields it cannot read stay unknown.
RdmaRate parseRate(const std::string& text);
// Per-lane rate of a speed name ("HDR" 50); unknown for a name not in the kernel's table.
std::optional<double> laneGbps(const std::string& speed);

struct RdmaGid {
  int index = 0;
  std::string gid;   // as sysfs prints it: eight groups of four hex digits
  std::string type;  // "IB/RoCE v1", "RoCE v2"; "" unknown (no gid_attrs, or unreadable)
  std::string ndev;  // the netdev a RoCE GID belongs to; "" none or unknown
};

struct RdmaPort {
  int number = 0;
  std::optional<int> state, phys_state;  // the kernel's numbers
  std::string state_name, phys_state_name;
  std::string link_layer;  // "InfiniBand", "Ethernet"; "" unknown
  std::string rate_text;
  RdmaRate rate;
  std::optional<unsigned> lid, sm_lid;
  std::vector<RdmaGid> gids;  // non-zero entries only (the kernel shows empty ones as zeros)
  // Every counter that could be read, by its file name; a file that is absent is not listed
  // (kernels differ: port_xmit_wait is newer), one that exists and cannot be read is unknown.
  std::map<std::string, uint64_t> counters, hw_counters;
  std::optional<int> netdev_mtu;  // RoCE: <root>/class/net/<ndev>/mtu of the port's GIDs
  // From ibv_query_port, where the device could be opened.
  bool verbs_read = false;
  std::optional<int> active_mtu, max_mtu;  // bytes
  std::string speed_supported;             // fastest speed port_cap_flags2 advertises ("NDR")
  bool width_2x_supported = false;
  std::vector<std::string> unknown;  // "counters/symbol_error (N/A (no PMA))"
};

struct RdmaDevice {
  std::string name;  // "mlx5_0"
  std::string node_type, fw_ver, node_guid, hca_type, board_id;
  std::vector<RdmaPort> ports;
  std::vector<std::string> unknown;
};

struct RdmaSnapshot {
  std::string root;        // "/sys"
  bool class_dir = false;  // <root>/class/infiniband exists
  std::vector<RdmaDevice> devices;
  // getrlimit(RLIMIT_MEMLOCK) soft limit: -1 unlimited; unknown when the call failed.
  std::optional<int64_t> memlock_bytes;
  // CAP_IPC_LOCK in the effective set: the kernel then ignores the limit for registration.
  std::optional<bool> cap_ipc_lock;
  bool verbs_compiled = false;
  std::string verbs_note;  // why libibverbs added nothing ("" when it did)
};

// Devices, ports, GIDs and counters under <root>/class/infiniband, sorted by name and number.
RdmaSnapshot readRdmaSysfs(const std::string& root);
// readRdmaSysfs plus this process's memlock limit and, on the live tree ("/sys") where
// libibverbs was found at build time, ibv_query_port's readings. Never throws.
RdmaSnapshot probeRdma(const std::string& root);
// "/sys", or the recorded tree in CCSCOPE_TESTONLY_SYSFS_ROOT (tests and demonstrations only).
std::string rdmaSysfsRoot();

// "mlx5_0:1"
std::string portLabel(const RdmaDevice& d, const RdmaPort& p);

}  // namespace ccscope::transports
