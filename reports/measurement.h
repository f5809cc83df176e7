// Results as plain data: what the harness measured and under which conditions. Writers turn
// these into tables, JSON Lines and (later) CSV/HTML/JUnit; the harness never prints.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ccscope::reports {

inline constexpr int kSchemaVersion = 1;

// A latency histogram's buckets are a quarter octave wide: bucket k holds [2^(k/4), 2^((k+1)/4))
// microseconds, 19% wide. Two times more than 19% apart never share a bucket, so modes one
// context switch apart (docs/performance.md, "Small-message latency") show as separate peaks.
inline constexpr int kHistBucketsPerOctave = 4;

struct HistBucket {
  double lower_us = 0;  // 2^(k/4), rounded to 4 significant digits
  uint64_t count = 0;
};

struct LatencyStats {  // microseconds, per iteration, max over ranks
  double min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0, stdev = 0;
  std::vector<HistBucket> hist;  // non-empty buckets, ascending; every sample in one
};

struct Measurement {
  std::string collective, algorithm, transport;
  std::string requested_algorithm;  // what --algo asked for: "auto" where `algorithm` is its pick
  int ranks = 1;
  uint64_t bytes = 0;  // per rank buffer size (nccl-tests "size")
  uint64_t count = 0;  // elements
  std::string dtype, redop;
  int root = -1;
  bool in_place = false;
  int iters = 0;
  double time_us = 0;  // mean of back-to-back iterations, max over ranks
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  double busbw_factor = 1;
  int64_t wrong = -1;  // elements wrong summed over ranks; -1: not checked
  LatencyStats lat;
  std::string note;  // e.g. why --algo auto picked this algorithm
  // --device cuda: where the buffers were ("host" or "cuda") and how the transport moved them
  // ("device": device to device; "staged": through pinned host buffers; "host").
  std::string buffers = "host", path = "host";
  double device_time_us = -1;  // mean per operation from CUDA events, max over ranks; -1: none
  // The pipeline segment the schedule was cut into (what `ccscope model fit` replays); 0: none.
  uint64_t segment_bytes = 0;
};

// The algorithm a row stands for in series and comparisons: "auto" for auto's rows (whose
// `algorithm` is its pick, and which must not merge with that algorithm's own rows).
inline const std::string& askedAlgorithm(const Measurement& m) {
  return m.requested_algorithm.empty() ? m.algorithm : m.requested_algorithm;
}

struct RunMetadata {
  std::string version;
  std::vector<std::string> argv;
  std::string collective;
  std::vector<std::string> algorithms;
  bool interleaved = false;  // --interleave: the algorithms took turns at each size
  std::string host_pages;    // "huge" or "base": what the buffers asked for ("" in old files)
  std::string transport;
  int ranks = 1;
  std::vector<std::string> hosts;  // per rank
  std::string launcher;
  std::map<std::string, std::string> libraries;  // name -> version
  std::map<std::string, std::string> env;        // selected NCCL_*, UCX_*, OMPI_*, CCSCOPE_*
  std::string start_time;                        // ISO 8601, UTC
};

struct RunSummary {
  double avg_busbw_gbps = 0;  // over every row and placement, as nccl-tests
  int64_t wrong_total = 0;
  int rows = 0;
};

// Receives results as they are produced; implementations write them out immediately.
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual void onRun(const RunMetadata&) {}
  virtual void onSection(const std::string& /*title*/) {}
  virtual void onMeasurement(const Measurement&) {}
  virtual void onProgress(int /*done*/, int /*total*/, double /*elapsed_s*/) {}
  virtual void onEnd(const RunSummary&) {}
};

}  // namespace ccscope::reports
