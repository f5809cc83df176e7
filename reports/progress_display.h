// One-line progress on a terminal's stderr ("size 5 of 24, 12 s elapsed, ~30 s left"): shows a
// long sweep is alive, never touches stdout or the result files, and is off when stderr is not
// a terminal.
#pragma once

#include <cstdio>

#include "reports/measurement.h"

namespace ccscope::reports {

class ProgressDisplay : public ResultSink {
 public:
  // Enabled only if `out` is a terminal.
  explicit ProgressDisplay(std::FILE* out);
  void onProgress(int done, int total, double elapsed_s) override;
  void onEnd(const RunSummary&) override;

 private:
  std::FILE* out_;
  bool enabled_;
};

}  // namespace ccscope::reports
