// libFuzzer target for the pickle reader behind pickled Flight Recorder dumps: the strict and the
// repairing decode, the JSON they give (it must serialise, so its text must be valid UTF-8), and
// the Flight Recorder reading of that JSON. Built and run by scripts/fuzz-analyze.sh, seeded
// with diagnostics/analyze/fuzz/pickle_seeds (two real PyTorch dumps and a protocol 5 pickle).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "diagnostics/analyze/flight_recorder.h"
#include "diagnostics/analyze/pickle_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ccscope::diagnostics;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  // Smaller copy-out limits than the defaults keep each input fast; the checks are the same.
  PickleOptions options;
  options.limits.max_output_values = size_t{1} << 16;
  options.limits.max_output_bytes = size_t{4} << 20;
  (void)looksLikePickle(in);
  for (const bool repair : {false, true}) {
    options.repair_string_lengths = repair;
    auto decoded = decodePickle(in, options);
    if (!decoded.isOk()) continue;
    const std::string text = decoded->dump();
    ProgressTracker tracker;
    (void)parseFlightRecorderDump(text, 1, "rank_1", tracker);
    (void)tracker.conclude();
  }
  return 0;
}
