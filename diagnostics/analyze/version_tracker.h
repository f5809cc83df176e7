// VersionTracker: the NCCL versions the logs report ("NCCL version 2.21.5+cuda12.4"). Ranks of
// one job must load one NCCL; two versions in one job's logs are a root cause of their own (the
// wire protocol and the algorithms differ), whatever else the logs say.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/analyze/event.h"

namespace ccscope::diagnostics {

class VersionTracker {
 public:
  // Parses one line that contains "NCCL version" (cheap otherwise).
  void parseLine(std::string_view body, const std::string& host, const reports::Evidence& where);
  // One event per version when more than one was seen (none otherwise).
  std::vector<Event> conclude() const;

 private:
  struct Seen {
    std::string host;
    reports::Evidence evidence;
  };
  std::map<std::string, Seen> versions_;  // "2.21.5" -> where it was first seen
};

const FindingSpec& versionMismatchSpec();

// NetPluginTracker: whether each host's NCCL loaded a network plugin ("NET/Plugin: Loaded net
// plugin ...", "Plugin name set by env to ...", the sharp plugins' "Plugin Path : ...") or fell
// back to its internal one ("... Using internal network plugin", "... using internal
// implementation"). Hosts of one job that differ there use different network transports, which
// hangs or fails their connections.
class NetPluginTracker {
 public:
  // Parses one line that contains "Plugin" (cheap otherwise).
  void parseLine(std::string_view body, const std::string& host, const reports::Evidence& where);
  // Events naming the hosts without the plugin when some hosts loaded one (none otherwise).
  std::vector<Event> conclude() const;

 private:
  std::map<std::string, reports::Evidence> loaded_;    // host -> a line that loaded a plugin
  std::map<std::string, reports::Evidence> internal_;  // host -> a line that fell back
};

const FindingSpec& netPluginMismatchSpec();

}  // namespace ccscope::diagnostics
