// What `ccscope hang` read on one node while a job hung: the job's processes (state, threads,
// environment, Python stack, GPU use, Flight Recorder dump), NCCL RAS's report and the kernel
// log's GPU lines, and which sources could not be read and why. It is written as JSON
// (`ccscope hang --json`) and read back by `ccscope analyze`, which merges the nodes of a job.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace ccscope::diagnostics {

inline constexpr const char* kHangSnapshotFormat = "ccscope.hang";
inline constexpr int kHangSnapshotVersion = 1;

struct HangThread {
  int tid = 0;
  std::string name;  // comm
  char state = '?';  // R S D Z T t X I
  std::string wchan;
  double cpu_percent = -1;                // over the sampling interval; -1 unknown
  std::vector<std::string> kernel_stack;  // root only
};

struct HangProcess {
  int pid = 0;
  int ppid = 0;
  int rank = -1;
  int local_rank = -1;
  int world_size = -1;
  std::string job;  // what groups processes into one job (rendezvous address, Slurm job, ...)
  std::string cmdline;
  char state = '?';
  std::string wchan;  // the main thread's
  double cpu_percent = -1;
  long rss_kib = -1;
  std::vector<HangThread> threads;
  std::map<std::string, std::string> env;  // the variables that matter to a diagnosis
  std::string nccl_library;                // mapped libnccl path ("" when not mapped)
  bool torch = false;                      // libtorch mapped
  std::vector<int> helpers;                // children of the same rank (data loader workers)
  std::string py_stack;                    // py-spy dump's output
  std::string py_stack_error;              // why there is none
  std::optional<int> gpu_sm_percent;       // NVML, this process's SM use
  std::optional<long long> gpu_memory_mib;
  std::string gpu_error;  // why no GPU reading
  std::string fr_dump;    // a Flight Recorder dump as JSON text ("": none)
  std::string fr_source;  // where it came from, or why none
};

// One source of evidence and whether it could be read. A source that could not be read is
// listed as such and never counts as healthy.
struct HangSource {
  std::string name;    // "processes", "ras", "py-spy", "flight-recorder", "nvml", "kernel-log"
  std::string status;  // "read", "unavailable", "error", "skipped"
  std::string detail;
};

struct HangSnapshot {
  std::string node;
  std::string taken_at;  // UTC, ISO 8601
  double timeout_s = 0;
  double seconds = 0;  // how long the reading took
  std::vector<HangSource> sources;
  std::vector<HangProcess> processes;
  std::string ras_address;
  std::string ras_text;                   // the report as the server sent it (text format)
  std::string ras_json;                   // or as JSON text ("" when not)
  std::vector<std::string> kernel_log;    // GPU-related kernel log lines (NVRM, Xid)
  std::vector<std::string> rdma_devices;  // /sys/class/infiniband entries
};

nlohmann::json toJson(const HangSnapshot& s);
// Invalid-argument status when `j` is not a snapshot of a version this build reads.
core::Result<HangSnapshot> hangSnapshotFromJson(const nlohmann::json& j);
// True when the document says it is a snapshot (of any version).
bool isHangSnapshot(const nlohmann::json& j);

}  // namespace ccscope::diagnostics
