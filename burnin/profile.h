// A burn-in profile (`ccscope burnin --profile FILE.toml`): which phases run, with what sizes,
// durations and thresholds (docs/burnin.md, "Profiles"). Every key is checked: an unknown one,
// a wrong type or a bad value is an error naming it, so a typo never silently skips a check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "burnin/pairing.h"
#include "core/status.h"

namespace ccscope::burnin {

struct PairsSpec {
  bool enabled = true;
  Scope scope = Scope::kHosts;
  int rounds = 0;  // 0: every pair
  uint64_t seed = 1;
  uint64_t bytes = 1 << 20;
  double test_s = 0.2;
  int lat_iters = 2000;
  double degraded = 0.7, failed = 0.3;
  bool retest = true;
};

// One collective sweep, judged like `ccscope bench`'s report: limits per size (absolute) and a
// tolerance against a baseline run of the fleet (relative to the population).
struct SweepSpec {
  std::string collective = "allreduce", algo = "ring";
  uint64_t min_bytes = 8, max_bytes = 16 << 20;
  int iters = 20, warmup = 5;
  std::string min_busbw, max_lat;  // "1M=5,16M=10" GB/s, "8=100" us: bench's syntax
  std::string baseline, tolerance = "10%";
};

struct SoakSpec {
  bool enabled = false;
  double duration_s = 600, interval_s = 5;
  std::string links = "ring";  // all: every pair each sample; ring: unit i with i+1; none
  uint64_t bytes = 1 << 20;
  double test_s = 0.1;
  int lat_iters = 200;
  std::vector<std::string> collectives;  // sampled each interval
  std::string collective_algo = "auto";
  uint64_t collective_bytes = 1 << 20;
  double degraded = 0.7, failed = 0.3;
  double min_z = 6;  // change-point significance
};

// GPCNeT-style: a latency and a bandwidth victim pair, alone and under all-to-all traffic
// among every other rank; the impact factor is loaded / alone (p99), alone / loaded (bandwidth).
struct CongestionSpec {
  bool enabled = false;
  int repeats = 3;
  int lat_iters = 2000;
  uint64_t bytes = 1 << 20;  // the bandwidth victim's messages
  double test_s = 0.3;
  uint64_t aggressor_bytes = 1 << 20;
  double max_factor = 0;  // > 0: an impact factor above it is degraded
};

struct Profile {
  std::string name, source;
  std::string transport = "tcp", ifname;
  double timeout_s = 30;
  bool preflight = true;
  PairsSpec pairs;
  std::vector<SweepSpec> sweeps;
  SoakSpec soak;
  CongestionSpec congestion;
};

core::Result<Profile> loadProfile(const std::string& path);
core::Result<Profile> parseProfile(const std::string& text, const std::string& source);

}  // namespace ccscope::burnin
