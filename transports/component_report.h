// What `ccscope info` (and run metadata) says about one optional component: compiled in or not,
// its library version, the devices found (none is a normal answer on CPU-only machines).
#pragma once

#include <string>
#include <vector>

namespace ccscope::transports {

struct ComponentReport {
  std::string name;
  bool compiled = false;
  std::string version;
  std::vector<std::string> devices;
  std::string note;  // e.g. "no RDMA device found"
};

// Every optional component, probed now (each probe is bounded and never throws).
std::vector<ComponentReport> probeComponents();

}  // namespace ccscope::transports
