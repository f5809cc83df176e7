// Shared fixtures of the report tests: plausible rows and runs without running a benchmark.
#pragma once

#include <string>
#include <vector>

#include "reports/run_records.h"

namespace ccscope::reports::testing {

// How often `needle` occurs in `text` (non-overlapping).
inline size_t countOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = 0; (p = text.find(needle, p)) != std::string::npos; p += needle.size()) ++n;
  return n;
}

// An allreduce row whose numbers follow from its size (busbw from time, a modest spread).
inline Measurement row(uint64_t bytes, bool in_place = false, const std::string& algo = "ring",
                       double time_us = 0) {
  Measurement m;
  m.collective = "allreduce";
  m.algorithm = algo;
  m.transport = "shm";
  m.ranks = 4;
  m.bytes = bytes;
  m.count = bytes / 4;
  m.dtype = "float";
  m.redop = "sum";
  m.in_place = in_place;
  m.iters = 20;
  m.time_us = time_us > 0 ? time_us : 20 + bytes / 2000.0;
  m.algbw_gbps = bytes / m.time_us / 1e3;
  m.busbw_factor = 1.5;
  m.busbw_gbps = m.algbw_gbps * 1.5;
  m.wrong = 0;
  m.lat = {m.time_us * 0.9, m.time_us, m.time_us * 1.1,  m.time_us * 1.3,
           m.time_us * 1.4, m.time_us, m.time_us * 0.05, {}};
  return m;
}

// A run sweeping 8 B .. 1 MiB (x4 steps), both placements, for each algorithm given.
inline RunRecords sweep(const std::string& label,
                        const std::vector<std::string>& algos = {"ring"}) {
  RunRecords r;
  r.label = label;
  r.source = label + ".jsonl";
  RunMetadata meta;
  meta.collective = "allreduce";
  meta.transport = "shm";
  meta.algorithms = algos;
  meta.ranks = 4;
  meta.hosts = {"node1", "node1", "node2", "node2"};
  meta.start_time = "2025-01-31T12:00:00Z";
  r.meta = meta;
  for (const auto& a : algos)
    for (uint64_t b = 8; b <= (1u << 20); b *= 4)
      for (bool ip : {false, true}) r.rows.push_back(row(b, ip, a));
  return r;
}

// Makes a row `factor` times slower in every timing (and bandwidth lower to match).
inline void slowDown(Measurement& m, double factor) {
  m.time_us *= factor;
  m.algbw_gbps /= factor;
  m.busbw_gbps /= factor;
  m.lat.min *= factor, m.lat.p50 *= factor, m.lat.p90 *= factor, m.lat.p99 *= factor;
  m.lat.max *= factor, m.lat.mean *= factor;
}

}  // namespace ccscope::reports::testing
