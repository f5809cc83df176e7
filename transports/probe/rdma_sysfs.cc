#include "transports/probe/rdma_sysfs.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace ccscope::transports {

#ifdef CCSCOPE_HAVE_VERBS
void addVerbsReadings(RdmaSnapshot& s);  // verbs_probe.cc
#endif

namespace {

namespace fs = std::filesystem;

constexpr const char* kLiveRoot = "/sys";
constexpr int kCapIpcLock = 14;  // linux/capability.h

// The PortCounters that burn-in watches (sysfs.c's pma_attrs); traffic counters are left out.
constexpr const char* kPortCounters[] = {"symbol_error",
                                         "link_error_recovery",
                                         "link_downed",
                                         "port_rcv_errors",
                                         "port_rcv_remote_physical_errors",
                                         "port_rcv_switch_relay_errors",
                                         "port_xmit_discards",
                                         "port_xmit_constraint_errors",
                                         "port_rcv_constraint_errors",
                                         "local_link_integrity_errors",
                                         "excessive_buffer_overrun_errors",
                                         "VL15_dropped",
                                         "port_xmit_wait"};

// The kernel's rate table (sysfs.c rate_show): the name after the width and the lane rate.
struct SpeedName {
  const char* name;
  double lane_gbps;
};
constexpr SpeedName kSpeeds[] = {{"SDR", 2.5},  {"DDR", 5},   {"QDR", 10},
                                 {"FDR10", 10}, {"FDR", 14},  {"EDR", 25},
                                 {"HDR", 50},   {"NDR", 100}, {"XDR", 200}};

// A file's first line without the newline; nullopt when absent or when the read fails (sysfs
// answers EINVAL for an empty GID entry's type, EIO or ENOSYS for a counter without a PMA).
std::optional<std::string> readLine(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return std::nullopt;
  std::string line;
  if (!std::getline(in, line) && line.empty()) return std::nullopt;
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

std::optional<uint64_t> parseUnsigned(const std::string& s, int base) {
  if (s.empty()) return std::nullopt;
  size_t used = 0;
  try {
    uint64_t v = std::stoull(s, &used, base);
    if (used == s.size() && s[0] != '-') return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// "4: ACTIVE" -> 4, "ACTIVE".
void parseNumbered(const std::string& s, std::optional<int>& number, std::string& name) {
  size_t colon = s.find(':');
  auto n = parseUnsigned(s.substr(0, colon), 10);
  if (!n || colon == std::string::npos) return;
  number = static_cast<int>(*n);
  name = s.substr(std::min(s.size(), colon + 2));
}

bool isZeroGid(const std::string& gid) {
  return std::all_of(gid.begin(), gid.end(), [](char c) { return c == '0' || c == ':'; });
}

// Entries of a directory named by numbers (ports, GID indices), in numeric order.
std::vector<int> numberedEntries(const fs::path& dir) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (auto n = parseUnsigned(e.path().filename().string(), 10))
      out.push_back(static_cast<int>(*n));
  std::sort(out.begin(), out.end());
  return out;
}

void readCounter(const fs::path& file, const std::string& key, std::map<std::string, uint64_t>& to,
                 std::vector<std::string>& unknown) {
  auto text = readLine(file);
  auto v = text ? parseUnsigned(*text, 10) : std::nullopt;
  if (v)
    to[file.filename().string()] = *v;
  else
    unknown.push_back(fmt::format("{} ({})", key, text ? *text : "unreadable"));
}

void readCounters(const fs::path& port, RdmaPort& p) {
  if (!fs::is_directory(port / "counters")) {
    p.unknown.push_back("counters (no counters/ directory)");
  } else {
    for (const char* name : kPortCounters)
      if (fs::exists(port / "counters" / name))
        readCounter(port / "counters" / name, fmt::format("counters/{}", name), p.counters,
                    p.unknown);
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(port / "hw_counters", ec)) {
    std::string name = e.path().filename().string();
    if (name != "lifespan") readCounter(e.path(), "hw_counters/" + name, p.hw_counters, p.unknown);
  }
}

void readGids(const fs::path& port, RdmaPort& p) {
  bool typed = fs::is_directory(port / "gid_attrs" / "types");
  for (int k : numberedEntries(port / "gids")) {
    auto gid = readLine(port / "gids" / std::to_string(k));
    if (!gid || isZeroGid(*gid)) continue;
    RdmaGid g{k, *gid, "", ""};
    if (typed) {
      g.type = readLine(port / "gid_attrs" / "types" / std::to_string(k)).value_or("");
      g.ndev = readLine(port / "gid_attrs" / "ndevs" / std::to_string(k)).value_or("");
    }
    p.gids.push_back(g);
  }
  if (!typed && !p.gids.empty()) p.unknown.push_back("GID types (no gid_attrs/ directory)");
}

void readNetdevMtu(const std::string& root, RdmaPort& p) {
  for (const RdmaGid& g : p.gids) {
    if (g.ndev.empty()) continue;
    auto mtu = readLine(fs::path(root) / "class" / "net" / g.ndev / "mtu");
    if (auto v = mtu ? parseUnsigned(*mtu, 10) : std::nullopt) p.netdev_mtu = static_cast<int>(*v);
    return;
  }
}

RdmaPort readPort(const std::string& root, const fs::path& dir, int number) {
  RdmaPort p;
  p.number = number;
  auto need = [&](const char* name) {
    auto v = readLine(dir / name);
    if (!v) p.unknown.push_back(fmt::format("{} (absent or unreadable)", name));
    return v.value_or("");
  };
  parseNumbered(need("state"), p.state, p.state_name);
  parseNumbered(need("phys_state"), p.phys_state, p.phys_state_name);
  p.link_layer = need("link_layer");
  if (p.link_layer == "Unknown") p.link_layer.clear();
  p.rate_text = need("rate");
  p.rate = parseRate(p.rate_text);
  if (auto lid = readLine(dir / "lid")) {
    if (auto v = parseUnsigned(*lid, 16)) p.lid = static_cast<unsigned>(*v);
  }
  if (auto sm = readLine(dir / "sm_lid")) {
    if (auto v = parseUnsigned(*sm, 16)) p.sm_lid = static_cast<unsigned>(*v);
  }
  readGids(dir, p);
  readCounters(dir, p);
  if (p.link_layer == "Ethernet") readNetdevMtu(root, p);
  return p;
}

RdmaDevice readDevice(const std::string& root, const fs::path& dir) {
  RdmaDevice d;
  d.name = dir.filename().string();
  std::optional<int> type_number;
  parseNumbered(readLine(dir / "node_type").value_or(""), type_number, d.node_type);
  d.fw_ver = readLine(dir / "fw_ver").value_or("");
  d.node_guid = readLine(dir / "node_guid").value_or("");
  d.hca_type = readLine(dir / "hca_type").value_or("");
  d.board_id = readLine(dir / "board_id").value_or("");
  if (!fs::is_directory(dir / "ports")) d.unknown.push_back("ports (no ports/ directory)");
  for (int n : numberedEntries(dir / "ports"))
    d.ports.push_back(readPort(root, dir / "ports" / std::to_string(n), n));
  return d;
}

std::optional<bool> capIpcLock() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    auto caps = parseUnsigned(line.substr(line.find_first_not_of(" \t", 7)), 16);
    if (!caps) return std::nullopt;
    return ((*caps >> kCapIpcLock) & 1) != 0;
  }
  return std::nullopt;
}

}  // namespace

std::optional<double> laneGbps(const std::string& speed) {
  for (const SpeedName& s : kSpeeds)
    if (speed == s.name) return s.lane_gbps;
  return std::nullopt;
}

RdmaRate parseRate(const std::string& text) {
  RdmaRate r;
  std::istringstream in(text);
  double gbps = 0;
  std::string unit, lanes;
  if (in >> gbps >> unit && unit == "Gb/sec") r.total_gbps = gbps;
  size_t open = text.find('('), x = text.find('X', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || x == std::string::npos) return r;
  if (auto w = parseUnsigned(text.substr(open + 1, x - open - 1), 10))
    r.width = static_cast<int>(*w);
  size_t close = text.find(')', x);
  std::string name = text.substr(x + 1, close == std::string::npos ? close : close - x - 1);
  name.erase(0, name.find_first_not_of(' '));
  r.speed = name.empty() ? "SDR" : name;  // kernels before 5.x print no name for SDR
  r.lane_gbps = laneGbps(r.speed);
  if (!r.lane_gbps) r.speed.clear();
  return r;
}

RdmaSnapshot readRdmaSysfs(const std::string& root) {
  RdmaSnapshot s;
  s.root = root;
  fs::path cls = fs::path(root) / "class" / "infiniband";
  s.class_dir = fs::is_directory(cls);
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cls, ec)) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& d : dirs) s.devices.push_back(readDevice(root, d));
  return s;
}

RdmaSnapshot probeRdma(const std::string& root) {
  RdmaSnapshot s = readRdmaSysfs(root);
  struct rlimit rl {};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
    s.memlock_bytes = rl.rlim_cur == RLIM_INFINITY ? -1 : static_cast<int64_t>(rl.rlim_cur);
  s.cap_ipc_lock = capIpcLock();
#ifdef CCSCOPE_HAVE_VERBS
  s.verbs_compiled = true;
  if (root != kLiveRoot)
    s.verbs_note = "a recorded tree: ibv_query_port not consulted";
  else if (!s.devices.empty())
    addVerbsReadings(s);
#else
  s.verbs_note = "libibverbs not compiled in (libibverbs-dev not found at build time)";
#endif
  return s;
}

std::string rdmaSysfsRoot() {
  const char* v = std::getenv("CCSCOPE_TESTONLY_SYSFS_ROOT");
  return v && *v ? std::string(v) : std::string(kLiveRoot);
}

std::string portLabel(const RdmaDevice& d, const RdmaPort& p) {
  return fmt::format("{}:{}", d.name, p.number);
}

}  // namespace ccscope::transports
