// NCCL RAS's JSON status report (NCCL >= 2.28.7, SET FORMAT json) rendered as the lines NCCL's
// own text report prints for the same data (the operation-count mismatches, missing and dead
// ranks, error states), so that one set of rules and one progress parser read both formats.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ccscope::diagnostics {

// The text lines for a parsed JSON report (anything else gives "").
std::string rasJsonAsText(const nlohmann::json& report);

// NCCL 2.28.7-2.28.9 leave out the comma after "nvml_dev" in each missing rank's entry, so the
// JSON of any report with a missing rank does not parse; this puts it back. Other text is
// returned as it was.
std::string repairRasJson(const std::string& text);

}  // namespace ccscope::diagnostics
