#include "reports/progress_display.h"

#include <fmt/format.h>
#include <unistd.h>

namespace ccscope::reports {

ProgressDisplay::ProgressDisplay(std::FILE* out) : out_(out), enabled_(isatty(fileno(out))) {}

void ProgressDisplay::onProgress(int done, int total, double elapsed_s) {
  if (!enabled_) return;
  std::string eta =
      done > 0 ? fmt::format(", ~{:.0f} s left", elapsed_s / done * (total - done)) : "";
  fmt::print(out_, "\r\033[K[ccscope] step {} of {}, {:.0f} s elapsed{}", done, total, elapsed_s,
             eta);
  std::fflush(out_);
}

void ProgressDisplay::onEnd(const RunSummary&) {
  if (!enabled_) return;
  fmt::print(out_, "\r\033[K");
  std::fflush(out_);
}

}  // namespace ccscope::reports
