// The kernel log lines that matter to a hung job: the GPU driver's (NVRM, Xid, NVLink), the
// RDMA drivers', the OOM killer's and hung-task reports. Read from /dev/kmsg without blocking
// (needs root or kernel.dmesg_restrict=0) or from a saved `dmesg` text.
#pragma once

#include <string>
#include <vector>

namespace ccscope::diagnostics {

struct KernelLog {
  std::vector<std::string> lines;  // "[seconds since boot] message", oldest first
  std::string error;               // why it could not be read ("" when read)
};

// A GPU Xid as the driver prints it: "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen
// off the bus."
struct XidLine {
  std::string device;  // "PCI:0000:3b:00"
  int code = -1;
  int pid = -1;  // -1: not given ("pid='<unknown>'")
  std::string process;
  std::string text;  // what follows the code and the pid/name fields
};

// True when `line` is an Xid line (`out` filled).
bool parseXidLine(const std::string& line, XidLine& out);

// Whether a kernel log message is one of those kept.
bool relevantKernelLine(const std::string& message);

// Reads `source` ("" or "/dev/kmsg": the live kernel log; otherwise a file of dmesg text),
// keeping relevant lines logged at or after `since_s` seconds after boot (0: all), the last
// `max_lines` of them.
KernelLog readKernelLog(const std::string& source, double since_s, size_t max_lines = 400);

}  // namespace ccscope::diagnostics
