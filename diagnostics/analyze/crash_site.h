// CrashSite: where a process died of a fatal signal, read from the backtrace its signal handler
// printed (UCX "Caught signal", Open MPI "Process received signal", glibc backtrace_symbols,
// gdb). The frame the signal interrupted names the code that faulted: inside NCCL, UCX, MPI or
// Gloo it is the library's fault (or a mismatch between libraries), inside the CUDA driver the
// GPU stack's, inside a verbs provider the RDMA stack's. Frames of the application or of code
// we do not know conclude nothing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/analyze/event.h"

namespace ccscope::diagnostics {

class CrashSite {
 public:
  // A line that reports the signal: frames are read from the lines after it. The finding takes
  // its rank, host and position from `origin` (that line's).
  void start(std::string_view body, long line, const Event& origin);
  bool active() const { return active_; }
  // Every line while active(); concludes once the window or the frame budget is spent.
  void feed(std::string_view body, long line, std::vector<Event>& out);
  // End of input: concludes a window still open.
  void finish(std::vector<Event>& out);

 private:
  struct Frame {
    std::string object;  // "libuct.so.0", "python3", ...
    reports::Evidence where;
  };
  void conclude(std::vector<Event>& out);
  bool active_ = false;
  bool ucx_handler_ = false;  // UCX's "Caught signal" handler printed the frames
  bool gdb_ = false;          // gdb: frame #0 is the interrupted one
  Event origin_;
  long started_ = 0;
  int concluded_ = 0;
  reports::Evidence signal_line_;
  std::vector<Frame> frames_;
};

// The object a backtrace line names, or "" when the line is not a frame.
std::string frameObject(std::string_view line);

const FindingSpec& crashInLibrarySpec();
const FindingSpec& crashInGpuDriverSpec();
const FindingSpec& crashInRdmaProviderSpec();

}  // namespace ccscope::diagnostics
