// The layer probes of `ccscope diagnose`, run inside the job by every rank, bottom-up, each
// under its own deadline. Each rank posts its findings to the rendezvous store; rank 0 gathers
// them (a rank that never posts is itself a finding) and the first failing layer is the verdict.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "launch/store_client.h"
#include "reports/diagnosis.h"
#include "transports/transport.h"

namespace ccscope::diagnostics {

struct ProbeOptions {
  double timeout_s = 5;            // per probe
  std::string ifname;              // tcp: interface the job would use
  size_t burst_bytes = 256 << 10;  // the pair probe's first burst; it grows on fast links
  double max_clock_skew_s = 2;     // --max-clock-skew
  // Test-only (CCSCOPE_TESTONLY_CLOCK_OFFSET=rank:seconds): that rank reports a shifted clock.
  int testonly_clock_offset_rank = -1;
  double testonly_clock_offset_s = 0;
  // Test-only (CCSCOPE_TESTONLY_DIAG_SKIP_COLLECTIVE=rank): that rank skips the allreduce probe.
  int testonly_skip_collective_rank = -1;
  // The GPU kernel probe's helper (the device index is appended); empty: this executable as
  // `ccscope info --gpu-probe-child`.
  std::vector<std::string> gpu_child_command;
};

// kWarn: passed, with a finding worth a look (it never makes the verdict).
enum class ProbeOutcome { kPass, kFail, kSkip, kWarn };

struct ProbeResult {
  core::Layer layer = core::Layer::kNone;
  std::string name;
  ProbeOutcome outcome = ProbeOutcome::kPass;
  std::string detail;
  reports::Culprit culprit;
  std::vector<std::string> evidence;
  std::string next_step;  // "" = the layer's generic one
};

// A device layer's verdict from its findings (GPU, RDMA): FAIL on a fault (with `fault_step`),
// WARN on a warning, faults then warnings as evidence. False when there are none: the caller
// says what passed.
bool applyFindings(ProbeResult& r, const std::vector<std::string>& faults,
                   const std::vector<std::string>& warnings, std::string fault_step);

// Every rank: this rank's local facts (interface, /dev/shm, memlock, env names, devices, the
// RDMA layer: sysfs ports, GIDs and counters; the GPU layer: CUDA, NVML and the kernel probe on
// this rank's share of its host's GPUs).
nlohmann::json localFacts(const ProbeOptions& o);
// Rank 0: library/configuration, RDMA (judgeRdmaLayer) and GPU (judgeGpuLayer) verdicts from
// every rank's local facts.
std::vector<ProbeResult> judgeLocalFacts(const std::vector<nlohmann::json>& facts,
                                         const std::vector<std::string>& hosts);

// Every rank: ping-pong and bursts each way with every other rank on another host (all ranks
// if the job is on one host), in one global pair order; the bursts start at o.burst_bytes and
// grow until one takes 2 ms (at most 16 MiB). With `only` (an array of [a, b], a < b), just
// those pairs: the second pass. Returns the measurements of the pairs this rank leads (the
// lower rank): {"peer", "ok", "rtt_us", "burst_bytes", "fwd_gbps", "back_gbps", "error"}.
nlohmann::json measurePairs(transports::Transport& t, const std::vector<std::string>& hosts,
                            const ProbeOptions& o, const nlohmann::json& only = nullptr);
// Rank 0: the pairs the first pass found slow that deserve a second pass, as [[a, b], ...]: a
// busy host can delay one pass's few milliseconds on a pair, so a pair is only slow when it is
// slow twice. Not a pair whose best burst took 50 ms or more (slow for certain, and measuring
// a throttled link again costs seconds), nor one with a rank that failed a pair.
nlohmann::json pairsToRecheck(const std::vector<nlohmann::json>& per_rank,
                              const std::vector<std::string>& hosts);
// Rank 0: folds the second pass into the first: each direction's better rate, and "passes":
// [[fwd, back], ...]; a pair that failed the second time takes that failure.
void mergeRecheck(std::vector<nlohmann::json>& per_rank, const std::vector<nlohmann::json>& second);
// Rank 0: unreachable, slow and asymmetric pairs from every rank's measurements.
ProbeResult judgePairs(const std::vector<nlohmann::json>& per_rank,
                       const std::vector<std::string>& hosts);
// The median bandwidth (GB/s) of every pair direction measured; 0 when none was.
double pairMedianGbps(const std::vector<nlohmann::json>& per_rank);

// Rank 0: the tcp connect verdict from every rank's {"ok", "error", "peer"}. A rank that could
// not connect out is the root; ranks that only waited for it to accept are symptoms.
ProbeResult judgeConnects(const std::vector<nlohmann::json>& per_rank,
                          const std::vector<std::string>& hosts);

// Gathers "diag/<key>/<rank>" from every rank (rank 0 only); missing ranks are reported.
core::Result<std::vector<nlohmann::json>> gather(launch::StoreClient& c, const std::string& key,
                                                 double timeout_s, std::vector<int>* missing);

const char* outcomeName(ProbeOutcome o);

// "rank 3 (node2)"; "?" for a host not known.
std::string rankLabel(int rank, const std::vector<std::string>& hosts);
const std::string& hostOf(int rank, const std::vector<std::string>& hosts);
// Every rank on one host, and that host known (not "?"): links between them are loopback or
// shared memory, so their speed says nothing about a network, and shm can reach every rank.
bool allOnOneHost(const std::vector<std::string>& hosts);
// " at best in N passes (a, b GB/s)" for the rates of each pass of a probe measured twice
// (each already formatted: "1.234" or "1.234/0.567"); "" for fewer than two.
std::string passesNote(const std::vector<std::string>& each_pass);
// The upper median (0 for none): what a probe compares one link or hop against.
double medianOf(std::vector<double> v);

// Rank 0: the verdict of a probe run. Layers bottom-up (bootstrap, host-network, rdma, gpu,
// library, application); within a layer the first failing probe in run order. Every probe is
// also a finding (a failure a root, the rest context) so --json carries all of them.
reports::Diagnosis diagnosisOf(const std::vector<ProbeResult>& results);

}  // namespace ccscope::diagnostics
