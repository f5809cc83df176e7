// HangTracker: what a hung job's processes were doing when `ccscope hang` looked (their Python
// stacks, thread states, CPU and GPU use), set against the ranks' collective progress (RAS
// operation counts, Flight Recorder): the rank behind is in its own code, stuck on its GPU, or
// gone; or every rank sits in the same collective and the data stopped moving.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "diagnostics/analyze/event.h"
#include "diagnostics/analyze/hang_snapshot.h"
#include "diagnostics/analyze/progress_tracker.h"

namespace ccscope::diagnostics {

enum class Activity {
  kUnknown,
  kInCollective,   // a communication call (torch.distributed, c10d, NCCL frames)
  kWaitingOnGpu,   // a synchronize, or the GPU busy while the host thread waits
  kHostCode,       // the program's own code, the GPU idle
  kDriverBlocked,  // a thread in uninterruptible sleep inside the GPU driver
  kExited,         // a zombie or a process gone
};
const char* activityName(Activity a);

struct ProcessActivity {
  Activity activity = Activity::kUnknown;
  std::string where;    // "load_batch (train.py:42)", "main thread S in do_nanosleep"
  std::string summary;  // one line for the evidence
};

// From the process's Python stack when there is one, else from its threads and GPU use.
ProcessActivity classifyProcess(const HangProcess& p);

class HangTracker {
 public:
  void addProcess(const std::string& node, const HangProcess& p, const std::string& file);
  void addRdmaDevices(size_t n) { rdma_devices_ += n; }
  std::vector<Event> conclude(const ProgressTracker& progress) const;
  bool empty() const { return ranks_.empty(); }

 private:
  struct Seen {
    std::string node, file;
    HangProcess process;
    ProcessActivity activity;
  };
  std::optional<Event> allInCollective(long lo, long hi) const;
  std::map<int, Seen> ranks_;
  size_t rdma_devices_ = 0;
};

const FindingSpec& rankInHostCodeSpec();
const FindingSpec& rankStuckOnGpuSpec();
const FindingSpec& rankInGpuDriverSpec();
const FindingSpec& rankExitedSpec();
const FindingSpec& rankStateSpec();
const FindingSpec& allInCollectiveSpec(core::Layer layer);

}  // namespace ccscope::diagnostics
