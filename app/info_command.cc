#include "app/info_command.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "app/run_metadata.h"
#include "diagnostics/live/gpu_layer.h"
#include "diagnostics/live/rdma_layer.h"
#include "transports/component_report.h"
#include "transports/probe/rdma_sysfs.h"
#include "transports/transport.h"
#ifdef CCSCOPE_HAVE_MPI
#include "collectives/baselines/mpi/mpi_runtime.h"
#endif

namespace ccscope::app {

namespace {

struct InfoOptions {
  bool json = false;
  int gpu_probe_child = -1;  // hidden: run the GPU kernel probe's child side on this device
  double gpu_timeout_s = 5;
};

// The kernel probe's helper is this binary again; /proc/self/exe survives a replaced file.
diagnostics::GpuLayerOptions gpuOptions(const InfoOptions& o) {
  diagnostics::GpuLayerOptions g;
  g.child_command = {"/proc/self/exe", "info", diagnostics::kGpuProbeChildFlag};
  g.timeout_s = o.gpu_timeout_s;
  return g;
}

int printJson(const InfoOptions& o) {
  nlohmann::json j = {{"version", CCSCOPE_VERSION},
                      {"host", hostName()},
                      {"transports", transports::transportNames(true)},
                      {"components", nlohmann::json::array()}};
  for (const auto& c : transports::probeComponents())
    j["components"].push_back({{"name", c.name},
                               {"compiled", c.compiled},
                               {"version", c.version},
                               {"devices", c.devices},
                               {"note", c.note}});
  j["rdma"] = diagnostics::rdmaReportJson(transports::probeRdma(transports::rdmaSysfsRoot()));
  j["gpu"] = diagnostics::gpuReportJson(diagnostics::runGpuLayer(gpuOptions(o)));
  std::cout << j.dump(2) << "\n";
  return kExitOk;
}

int runInfo(const InfoOptions& o) {
  if (o.gpu_probe_child >= 0) return transports::runGpuKernelProbeChild(o.gpu_probe_child);
  if (o.json) return printJson(o);
  fmt::print("ccscope {} on {}\n", CCSCOPE_VERSION, hostName());
  fmt::print("transports built in: {}", transports::transportNames(true));
#ifdef CCSCOPE_HAVE_MPI
  fmt::print(", mpi (baseline: --transport mpi --algo native)\n");
  fmt::print("  mpi: {}\n", collectives::mpi::libraryVersion());
#else
  fmt::print("\n  mpi: not compiled in (libopenmpi-dev not found at build time)\n");
#endif
  fmt::print("optional components:\n");
  for (const auto& c : transports::probeComponents()) {
    fmt::print("  {:6} {}{}\n", c.name, c.compiled ? "compiled in" : "absent",
               c.version.empty() ? "" : fmt::format(", version {}", c.version));
    for (const auto& d : c.devices) fmt::print("         device: {}\n", d);
    if (!c.note.empty()) fmt::print("         {}\n", c.note);
  }
  for (const auto& l :
       diagnostics::rdmaReportText(transports::probeRdma(transports::rdmaSysfsRoot())))
    fmt::print("{}\n", l);
  for (const auto& l : diagnostics::gpuReportText(diagnostics::runGpuLayer(gpuOptions(o))))
    fmt::print("{}\n", l);
  return kExitOk;
}

}  // namespace

Command addInfoCommand(CLI::App& root) {
  auto o = std::make_shared<InfoOptions>();
  CLI::App* sub = root.add_subcommand("info", "Transports, libraries and devices found");
  sub->add_flag("--json", o->json, "Print everything as one JSON object");
  sub->add_option("--gpu-timeout", o->gpu_timeout_s,
                  "Seconds each GPU's kernel-and-copy probe may take (5)");
  sub->add_option(diagnostics::kGpuProbeChildFlag, o->gpu_probe_child)->group("");
  return {sub, [o] { return runInfo(*o); }};
}

}  // namespace ccscope::app
