// CSV: one header row with units in the column names (time_us, busbw_GBps, bytes_B), one line
// per result row. Numbers are written in their shortest round-trip form, so every numeric field
// parses back to exactly the value of the JSON record. Baseline columns are empty without one.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "reports/report_model.h"

namespace ccscope::reports {

std::vector<std::string> csvHeader();
void writeCsv(const ReportModel& model, std::ostream& out);

}  // namespace ccscope::reports
