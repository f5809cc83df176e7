// libFuzzer target for the analyzer's line-level parsing: launcher-prefix stripping, the
// keyword/regex rule pass, the structured parsers (watchdog progress, ibstat blocks, P2P
// matrices, Flight Recorder JSON) and text sanitising. Built and run by scripts/fuzz-analyze.sh.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "diagnostics/analyze/analyzer.h"
#include "diagnostics/analyze/flight_recorder.h"
#include "diagnostics/analyze/line_prefix.h"
#include "diagnostics/analyze/rule_loader.h"
#include "reports/diagnosis.h"

namespace {

constexpr int kInputsPerAnalyzer = 512;

std::unique_ptr<ccscope::diagnostics::Analyzer> makeAnalyzer() {
  auto rules = ccscope::diagnostics::loadDefaultRules();
  if (!rules.isOk()) __builtin_trap();
  return std::make_unique<ccscope::diagnostics::Analyzer>(std::move(*rules));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ccscope;
  static std::unique_ptr<diagnostics::Analyzer> analyzer = makeAnalyzer();
  static int inputs = 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  analyzer->beginFile(size % 2 ? "rank_3.log" : "fuzz.log");
  long line_number = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    const auto ctx = diagnostics::parseLinePrefix(line);
    (void)diagnostics::ncclHeaderHost(ctx.body);
    analyzer->feedLine(line, ++line_number);
    start = end + 1;
  }
  analyzer->endFile();

  diagnostics::ProgressTracker tracker;
  (void)diagnostics::parseFlightRecorderDump(text, 1, "fr.json", tracker);
  (void)tracker.conclude();
  (void)reports::sanitizeText(text, 64);

  if (++inputs % kInputsPerAnalyzer == 0) {
    const auto d = analyzer->finish();
    (void)reports::toJsonText(d);
    analyzer = makeAnalyzer();
  }
  return 0;
}
