// Published figures, not fitted ones: each constant below is a line rate or an efficiency from
// its source (docs/model.md, "Presets", has the links), never tuned to the anchors the presets
// are checked against.
#include <fmt/format.h>

#include "model/predict.h"

namespace ccscope::model {

namespace {

// NVLink 4: 900 GB/s per GPU both ways, 450 GB/s each way (NVIDIA's H100/H200 data sheets).
constexpr double kNvlink4 = 450e9;
// NCCL's Simple protocol delivers ~82% of the line rate (ring busbw ~370 GB/s on 450 GB/s:
// NVIDIA's NCCL maintainers, nccl-tests issue 212).
constexpr double kProtocolEfficiency = 370.0 / 450.0;
// NCCL's own tuning model: NVLS efficiency on Hopper (src/graph/tuning.cc, nvlsEfficiency).
constexpr double kNvlsEfficiency = 0.85;
// ConnectX-7 at NDR 400 Gb/s: ~48 GB/s per port in NCCL (nccl-tests issues 267, 290, 319).
constexpr double kNdrPort = 48e9;
// NCCL's per-step hardware latencies, Simple protocol (tuning.cc hwLat: NVLink 3.4 us for the
// ring, the network 14 us).
constexpr double kNvlinkStep = 3.4e-6, kNetStep = 14e-6;

Topology hopperNode(const std::string& name, const std::string& gpu) {
  Topology t;
  t.name = name;
  t.ranks_per_host = 8;
  t.intra = {kNvlinkStep, kNvlink4 * kProtocolEfficiency};
  t.nic = {kNetStep, kNdrPort};
  t.nics_per_host = 8;
  // A rail-optimised two-level fat tree: 32 hosts per leaf group (a DGX SuperPOD scalable
  // unit), non-blocking; 0.3 us per switch (docs/model.md, Presets, gives the sources).
  t.switch_hop_s = 0.3e-6;
  t.hosts_per_leaf = 32;
  t.oversubscription = 1;
  t.gamma = 0;  // reductions are fused into NCCL's copy kernels, at HBM speed
  t.in_switch_factor = kNvlsEfficiency;
  t.source = fmt::format("8 x {} on NVLink 4 + NVSwitch (NVLS), 8 x 400G NDR rails", gpu);
  return t;
}

}  // namespace

std::vector<std::string> presetNames() { return {"h100-nvswitch-ndr", "h200-nvswitch-ndr"}; }

core::Result<Topology> preset(const std::string& name) {
  if (name == "h100-nvswitch-ndr") return hopperNode(name, "H100");
  if (name == "h200-nvswitch-ndr") return hopperNode(name, "H200");
  return core::Status(
      core::Code::kInvalidArgument,
      fmt::format("model: no preset '{}' (one of: {})", name, fmt::join(presetNames(), ", ")));
}

}  // namespace ccscope::model
