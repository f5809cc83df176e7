// The HTML report: one self-contained file (styles and the few lines of script inline, charts
// as inline SVG from svg_chart.h), so it opens offline and prints. Sections: verdict, runs,
// failures, diagnosis (when the results hold one), per collective busbw and latency charts,
// the pair-matrix heatmap placeholder (filled by later `ccscope pairs` records), the table.
#pragma once

#include <ostream>

#include "reports/report_model.h"

namespace ccscope::reports {

void writeHtml(const ReportModel& model, std::ostream& out);

}  // namespace ccscope::reports
