// `ccscope model predict`: a topology (hosts x ranks per host, the fabric within a host, NICs
// and a fat tree between hosts) and per-hop costs (fitted or a preset) in; predicted time,
// algbw and busbw per collective, algorithm, rank count and size out. On a fitted (CPU-driven)
// topology up to kScheduleRanks ranks, ring and tree replay their schedules (simulate.h, the
// model the fit used); otherwise each algorithm's registry formula (algorithms.h) is evaluated
// with the topology's effective alpha, beta and gamma per phase (docs/model.md, "Prediction").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/simulate.h"

namespace ccscope::model {

inline constexpr int kScheduleRanks = 64;

struct Hop {
  double alpha_s = 0;      // per message
  double bytes_per_s = 0;  // per direction
  double beta() const { return bytes_per_s > 0 ? 1 / bytes_per_s : 0; }
};

struct Topology {
  std::string name;
  int ranks_per_host = 1;
  Hop intra;                    // between two ranks of a host (NVLink, PCIe, shm)
  Hop nic;                      // one NIC port (with the host side of the network stack)
  int nics_per_host = 1;        // rails
  double switch_hop_s = 0;      // per switch traversed
  int hosts_per_leaf = 0;       // 0: one switch holds every host
  double oversubscription = 1;  // leaf uplinks : downlinks
  double gamma = 0;             // s per byte reduced
  double in_switch_factor = 0;  // NVLS/SHARP: the share of intra bandwidth an in-switch
                                // allreduce reaches (0: none)
  int cores = 0;                // CPUs a host's ranks share (CPU-driven transports; 0: none)
  bool one_machine = false;     // every host is a namespace of one machine: ranks share cores
  bool cpu_driven = false;      // host transports: the ranks' CPUs move the bytes
  uint64_t min_segment_bytes = 64 << 10;
  double llc_bytes = 0;  // CPU-driven: a machine's last-level cache (0: not modelled)
  double delta = 0;      // s per byte more beyond it
  std::string source;    // where the figures come from
};

// The presets (docs/model.md lists their sources): "h200-nvswitch-ndr" (8 x H200 over NVLink 4
// and NVSwitch with NVLS, 8 x 400G NDR rails, a two-level fat tree), "h100-nvswitch-ndr",
// "pcie-gen5-ndr" (8 GPUs on PCIe 5, no NVSwitch).
core::Result<Topology> preset(const std::string& name);
std::vector<std::string> presetNames();

// A fitted transport's costs as a topology of `ranks_per_host` ranks per host.
Topology fromParams(const Params& p, int ranks_per_host, int cores, bool one_machine,
                    uint64_t min_segment_bytes, double llc_bytes);

// Send, receive and scratch buffers: what a rank's schedule touches.
inline constexpr double kBuffersPerRank = 3;

struct Prediction {
  std::string collective, algorithm, method;  // method: "schedule" or "formula"
  int ranks = 0, hosts = 0;
  uint64_t bytes = 0;
  double seconds = 0, algbw_gbps = 0, busbw_gbps = 0;
};

// Algorithms modelled per collective: allreduce ring, tree, hierarchical, nvls (where the
// topology reduces in the switch); alltoall pairwise, hierarchical.
std::vector<std::string> modelAlgorithms(const std::string& collective, const Topology& t);

// kAuto: the schedule where one exists within kScheduleRanks, else the formula.
enum class Method { kAuto, kSchedule, kFormula };

core::Result<Prediction> predict(const Topology& t, const std::string& collective,
                                 const std::string& algorithm, int ranks, uint64_t bytes,
                                 Method method = Method::kAuto);

}  // namespace ccscope::model
