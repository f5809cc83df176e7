// The stdout table, column-compatible with nccl-tests' *_perf output (size, count, type, redop,
// root, then time/algbw/busbw/#wrong for out-of-place and in-place) so existing scrapers keep
// working; p50/p99 latency columns are appended at the end of each row.
#pragma once

#include <cstdio>
#include <optional>

#include "reports/measurement.h"

namespace ccscope::reports {

class TableWriter : public ResultSink {
 public:
  explicit TableWriter(std::FILE* out) : out_(out) {}
  void onRun(const RunMetadata& m) override;
  void onSection(const std::string& title) override;
  void onMeasurement(const Measurement& m) override;
  void onEnd(const RunSummary& s) override;

 private:
  // One line per size: either half may be missing (--placement, or no in-place form), and its
  // columns then read "-".
  void printRow(const Measurement* oop, const Measurement* ip);
  std::FILE* out_;
  std::optional<Measurement> pending_;  // out-of-place half of the current row
  bool interleaved_ = false;            // rows of several algorithms alternate: name each
};

}  // namespace ccscope::reports
