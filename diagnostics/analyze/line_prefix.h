// Strips what launchers and loggers put in front of a log line (Open MPI's "[1,3]<stdout>:",
// srun's "3: ", torchrun's "[default3]:", "[rank3]:", grep's "rank_3.log:", ISO/syslog/dmesg/glog
// timestamps) and keeps what they tell: the rank, the host, the wall-clock time.
#pragma once

#include <string_view>

namespace ccscope::diagnostics {

struct LineContext {
  std::string_view body;  // the line without its prefixes
  int rank = -1;          // from a launcher tag, -1 when none
  std::string_view host;  // from a syslog prefix or an NCCL "host:pid:tid [dev]" header
  bool has_time = false;  // true when an absolute date and time was found
  double time = 0;        // seconds since 1970-01-01 (time zone ignored)
};

LineContext parseLinePrefix(std::string_view raw);

// "host:pid:tid [dev] NCCL ..." -> host; empty when the line is not an NCCL debug line.
std::string_view ncclHeaderHost(std::string_view body);

}  // namespace ccscope::diagnostics
