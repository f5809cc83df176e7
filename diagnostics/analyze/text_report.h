// The human-readable report of `ccscope analyze`: layer, verdict, culprits, evidence as
// file:line, next step, then the other findings ranked.
#pragma once

#include <string>
#include <vector>

#include "reports/diagnosis.h"

namespace ccscope::diagnostics {

// `title` heads the report ("ccscope analyze: 3 file(s), 120 line(s)").
std::string renderText(const reports::Diagnosis& d, const std::vector<std::string>& notes,
                       const std::string& title = "ccscope analyze");

}  // namespace ccscope::diagnostics
