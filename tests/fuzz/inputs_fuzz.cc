// libFuzzer target for the file formats ccscope reads from others: JSON Lines results (`report`,
// `model fit`), diagnosis rule files (`analyze --rules`), burn-in profiles (`burnin --profile`)
// and NCCL RAS reports (JSON, repaired when cut). The first byte picks the reader; the rest is
// the file. Built and run by scripts/fuzz-analyze.sh.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "burnin/profile.h"
#include "diagnostics/analyze/ras_report.h"
#include "diagnostics/analyze/rule_loader.h"
#include "reports/jsonl_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ccscope;
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      std::istringstream in(text);
      (void)reports::readResults(in, "fuzz.jsonl");
      break;
    }
    case 1:
      (void)diagnostics::parseRules(text, "fuzz.toml");
      break;
    case 2:
      (void)burnin::parseProfile(text, "fuzz.toml");
      break;
    default: {
      const std::string repaired = diagnostics::repairRasJson(text);
      auto j = nlohmann::json::parse(repaired, nullptr, false);
      if (!j.is_discarded()) (void)diagnostics::rasJsonAsText(j);
      break;
    }
  }
  return 0;
}
