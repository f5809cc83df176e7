#include "app/nccl_modes.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

namespace ccscope::app {

using core::Status;

void addNcclModeOptions(CLI::App& b, NcclModeOptions& raw) {
  b.add_option("-R,--local_register", raw.nccl_register,
               "--transport nccl --algo native, buffers from ncclMemAlloc: 0 not registered "
               "(default), 1 ncclCommRegister, 2 symmetric windows (ncclCommWindowRegister)");
  b.add_option("-z,--blocking", raw.blocking,
               "--transport nccl --algo native: 0 enqueues each leg's back-to-back iterations "
               "and waits once at the end (nccl-tests' default), 2 waits for each (default)");
  b.add_option("-G,--cudagraph", raw.graph_launches,
               "--transport nccl --algo native: capture each size's timed iterations into a CUDA "
               "graph and launch it this many times (default 0: no graphs)");
}

// -z's 1 and 3 (a barrier after each iteration) are the barrier-separated series every row
// measures anyway.
Status parseNcclModes(const NcclModeOptions& r, bench::BenchConfig& c) {
  const bool native_only =
      c.transport == "nccl" && c.algorithms == std::vector<std::string>{"native"};
  const bool has_native =
      c.transport == "nccl" &&
      std::find(c.algorithms.begin(), c.algorithms.end(), "native") != c.algorithms.end();
  const char* kWaits = " (our schedules wait on the host between steps)";
  if (r.nccl_register < 0 || r.nccl_register > 2)
    return Status(
        core::Code::kInvalidArgument,
        fmt::format("-R takes 0 (none), 1 (local) or 2 (symmetric), not {}", r.nccl_register));
  if (r.nccl_register != 0 && !has_native)
    return Status(core::Code::kInvalidArgument,
                  "-R registers the buffers of NCCL's own collectives: it needs --transport nccl "
                  "--algo native");
  if (r.graph_launches < 0)
    return Status(
        core::Code::kInvalidArgument,
        fmt::format("-G takes a number of graph launches (0: none), not {}", r.graph_launches));
  if (r.graph_launches > 0 && !native_only)
    return Status(core::Code::kInvalidArgument,
                  fmt::format("-G captures NCCL's own collectives into CUDA graphs: it needs "
                              "--transport nccl --algo native{}",
                              kWaits));
  if (r.blocking != 0 && r.blocking != 2)
    return Status(core::Code::kInvalidArgument,
                  fmt::format("-z takes 0 (enqueue, wait at the end) or 2 (wait for each), not {}; "
                              "the barrier-separated series of -z 1 is measured in every row",
                              r.blocking));
  if (r.blocking == 0 && !native_only)
    return Status(core::Code::kInvalidArgument,
                  fmt::format("-z 0 enqueues NCCL's own collectives without waiting: it needs "
                              "--transport nccl --algo native{}",
                              kWaits));
  c.nccl_register = r.nccl_register;
  c.graph_launches = r.graph_launches;
  c.blocking = r.blocking;
  return Status::ok();
}

}  // namespace ccscope::app
