// Markdown for CI job summaries (append to $GITHUB_STEP_SUMMARY): the verdict first, then the
// runs, key numbers per series, and every failure grouped by kind (regressions with their
// baseline/now/change/noise, wrong results, limits), then any diagnosis.
#pragma once

#include <ostream>

#include "reports/report_model.h"

namespace ccscope::reports {

// Long failure lists are cut after this many rows (the CSV and JUnit files keep all of them).
inline constexpr size_t kMarkdownMaxListed = 50;

void writeMarkdown(const ReportModel& model, std::ostream& out);

// "passed" or "FAILED: 2 regressed rows, 1 row with wrong results": shared with the HTML header.
std::string verdictLine(const ReportModel& model);

}  // namespace ccscope::reports
