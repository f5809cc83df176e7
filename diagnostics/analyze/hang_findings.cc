// The findings HangTracker draws from what a hung job's processes were doing.
#include "diagnostics/analyze/hang_tracker.h"

namespace ccscope::diagnostics {

const FindingSpec& rankInHostCodeSpec() {
  static const FindingSpec spec{
      "application.hang-rank-in-host-code",
      core::Layer::kApplication,
      reports::FindingKind::kRoot,
      75,
      "the rank behind is in its own code, not in a collective",
      "Read that rank's stack (py-spy dump --pid PID): a data loader, a checkpoint, a rank-only "
      "branch or an exception handler kept it from the collective the others wait in."};
  return spec;
}

const FindingSpec& rankStuckOnGpuSpec() {
  static const FindingSpec spec{
      "gpu.hang-rank-stuck-on-gpu",
      core::Layer::kGpu,
      reports::FindingKind::kRoot,
      70,
      "the rank behind waits on its GPU outside any collective: a kernel of its own does not "
      "finish",
      "py-spy dump --native --pid PID shows the kernel launch it waits on; check nvidia-smi "
      "(SM use), dmesg for an Xid, and rerun that step under compute-sanitizer."};
  return spec;
}

const FindingSpec& rankInGpuDriverSpec() {
  static const FindingSpec spec{
      "gpu.hang-driver-blocked",
      core::Layer::kGpu,
      reports::FindingKind::kRoot,
      72,
      "a rank's thread is blocked inside the GPU driver (uninterruptible sleep)",
      "Read dmesg for NVRM/Xid lines and the thread's kernel stack (cat /proc/PID/task/TID/stack "
      "as root); a GPU that does not answer needs a reset (nvidia-smi -r) or the node drained."};
  return spec;
}

const FindingSpec& rankExitedSpec() {
  static const FindingSpec spec{
      "application.hang-rank-exited",
      core::Layer::kApplication,
      reports::FindingKind::kRoot,
      60,
      "a rank's process has exited while the others wait for it",
      "Read that rank's own log for its last error, and dmesg for the OOM killer "
      "(Killed process PID)."};
  return spec;
}

const FindingSpec& rankStateSpec() {
  static const FindingSpec spec{
      "application.hang-rank-state",
      core::Layer::kApplication,
      reports::FindingKind::kContext,
      0,
      "what the rank behind was doing when ccscope hang looked",
      "Install py-spy (pip install py-spy) and run ccscope hang as root for its Python stack."};
  return spec;
}

const FindingSpec& allInCollectiveSpec(core::Layer layer) {
  static const FindingSpec host{
      "host-network.hang-all-in-collective",
      core::Layer::kHostNetwork,
      reports::FindingKind::kRoot,
      35,
      "every rank is inside the same collective and none completes: the data stopped moving "
      "between them",
      "Run ccscope pairs over the job's hosts (or ccscope diagnose) to find the link that does "
      "not carry data; check NCCL's own log (NCCL_DEBUG=INFO) for the transport each pair uses."};
  static const FindingSpec rdma = [] {
    FindingSpec s = host;
    s.id = "rdma.hang-all-in-collective";
    s.layer = core::Layer::kRdma;
    s.next_step =
        "Check the RDMA ports on every host (ibstat, ibv_devinfo: state, errors) and run "
        "ccscope pairs --transport verbs over the job's hosts to find the link that stalls.";
    return s;
  }();
  return layer == core::Layer::kRdma ? rdma : host;
}

}  // namespace ccscope::diagnostics
