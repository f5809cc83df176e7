// Replays the schedules an algorithm builds, every rank's, as a discrete-event simulation under
// a Hockney cost: a message costs alpha + beta * bytes on its hop class (within a host, between
// hosts), reducing costs gamma per byte. A message starts when its send and its receive are both
// ready and what moves it is free: the sender's out port and the receiver's in port (a device
// fabric), or, for CPU-driven transports (shm, tcp, UCX on the host), both ranks' CPUs, which
// also reduce. alpha is latency: it holds neither. Where ranks outnumber the cores of their
// machine, the time is at least the machine's CPU work over its cores (docs/model.md, "CPU
// share"). The time comes with the counts (messages, bytes, reduced bytes per class) of the
// bound that set it, the critical path or the busiest machine's work, which is what
// `ccscope model fit` fits alpha, beta and gamma to: the schedule that ran is the one source of
// the counts (docs/model.md).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "collectives/algorithms.h"
#include "core/status.h"

namespace ccscope::model {

enum HopClass { kIntra = 0, kInter = 1 };
inline constexpr int kHopClasses = 2;

// Parameters in the order of Counts: alpha and beta per hop class, gamma, then delta.
struct Params {
  std::array<double, kHopClasses> alpha{5e-6, 5e-6};   // s per message
  std::array<double, kHopClasses> beta{2e-10, 2e-10};  // s per byte
  double gamma = 2e-10;                                // s per byte reduced
  // s per byte more for the share of bytes moved or reduced whose working set is beyond the
  // last-level cache (CPU-driven transports: memory bandwidth, not the copy loop, limits them).
  double delta = 0;
};

inline constexpr int kFeatures = 2 * kHopClasses + 2;
// Messages and bytes per hop class, bytes reduced, bytes beyond the cache.
using Counts = std::array<double, kFeatures>;
inline int msgIndex(HopClass c) { return 2 * c; }
inline int byteIndex(HopClass c) { return 2 * c + 1; }
inline constexpr int kReduceIndex = 2 * kHopClasses;
inline constexpr int kBeyondCacheIndex = 2 * kHopClasses + 1;
std::array<double, kFeatures> paramVector(const Params& p);
Params paramsFrom(const std::array<double, kFeatures>& v);

struct SimInput {
  const collectives::AlgorithmInfo* algo = nullptr;
  int ranks = 1;
  uint64_t count = 0;  // the collective's count, in elements
  size_t elem = 4;
  uint64_t segment_elems = 1;
  std::vector<int> host_of;  // per rank; empty: one host
  // CPU-driven: a transfer occupies the sender's and the receiver's CPU (else their ports).
  bool cpu_driven = false;
  // Cores of each machine (0: not a bound) and which machine each rank runs on (empty: its
  // host; namespaces of one machine share its cores).
  int cores = 0;
  std::vector<int> machine_of;
  double beyond_cache = 0;  // share of every byte moved or reduced that misses the cache
};

// The share of a working set beyond a cache of `llc` bytes (0: no cache modelled).
double beyondCache(double working_set, double llc);

struct SimResult {
  double seconds = 0;
  Counts counts{};  // of the binding bound: seconds == dot(counts, paramVector(params))
  uint64_t ops = 0;
  bool cpu_bound = false;  // the busiest machine's work over its cores set the time
};

core::Result<SimResult> simulate(const SimInput& in, const Params& p);

}  // namespace ccscope::model
