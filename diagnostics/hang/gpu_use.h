// What NVML says of a hung job's processes: each one's SM use over the last second (none in
// the period on a GPU it holds: 0%) and its GPU memory; and the node's RDMA devices.
#pragma once

#include <string>
#include <vector>

#include "diagnostics/analyze/hang_snapshot.h"

namespace ccscope::diagnostics {

// Fills gpu_sm_percent / gpu_memory_mib / gpu_error of snap's processes and adds the "nvml"
// source (unavailable without the driver's libnvidia-ml.so.1).
void readGpuUse(double sample_s, HangSnapshot& snap);

// /sys/class/infiniband's entries.
std::vector<std::string> rdmaDevices();

}  // namespace ccscope::diagnostics
