// The RDMA layer of `ccscope info` and `ccscope diagnose`: faults and warnings drawn from the
// device and port readings of transports/probe/rdma_sysfs.h (a pure function, so recorded trees
// and made-up snapshots test it), the report as JSON and text, and rank 0's verdict over every
// rank's report. A reading nobody could take is listed as unknown and yields no finding.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "diagnostics/live/probes.h"
#include "transports/probe/rdma_sysfs.h"

namespace ccscope::diagnostics {

// A fault makes the layer fail; a warning passes with something worth a look (a counter that
// counted since boot, a link slower than it could be).
enum class RdmaSeverity { kFault, kWarning };

struct RdmaFinding {
  RdmaSeverity severity = RdmaSeverity::kFault;
  std::string where;  // "mlx5_0:1", or "host" for the process's locked-memory limit
  std::string text;
};

// What a port could do at best, from the widest and fastest active ports of the same HCA type
// and link layer (this device's other ports first) and the speeds libibverbs says it supports.
struct PortLimits {
  std::optional<int> max_width;
  std::string width_from;  // the port that showed it: "mlx5_0:2"
  std::string max_speed;   // "NDR"
  std::string speed_from;  // a port, or "port_cap_flags2"
};

struct RdmaJudgement {
  std::vector<RdmaFinding> findings;  // faults first, each port in device order
  // Readings nobody could take, with the reason: "mlx5_0:1: counters/symbol_error (N/A (no
  // PMA))", "mlx5_0:1: max width (no other active port of MT4123 to compare)".
  std::vector<std::string> unknown;
};

// The error counters whose nonzero value since boot is a warning (burn-in compares deltas).
const std::vector<std::string>& watchedErrorCounters();

PortLimits portLimits(const transports::RdmaSnapshot& s, const transports::RdmaDevice& d,
                      const transports::RdmaPort& p);
// GID indices whose type is RoCE v2, in table order.
std::vector<int> roceV2GidIndices(const transports::RdmaPort& p);
// Every finding in the snapshot; no device at all yields none (the caller says "no device").
RdmaJudgement judgeRdma(const transports::RdmaSnapshot& s);

// The report with its judgement, as `info --json` prints it and a `diagnose` rank posts it.
nlohmann::json rdmaReportJson(const transports::RdmaSnapshot& s);
// The lines of `ccscope info`; "rdma: no RDMA device (no /sys/class/infiniband)" without one.
std::vector<std::string> rdmaReportText(const transports::RdmaSnapshot& s);

// Rank 0: the "rdma devices" result from every rank's rdmaReportJson (null: not reported).
// Fails on a fault, warns on a warning, skips when no rank has a device; evidence lines name
// the rank, its host, the device and the port. Ranks of one host are counted once.
ProbeResult judgeRdmaLayer(const std::vector<nlohmann::json>& per_rank,
                           const std::vector<std::string>& hosts);

}  // namespace ccscope::diagnostics
