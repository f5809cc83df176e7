// Pieces of the HTML report (html_writer.h), one function per section; each returns markup
// with every piece of user data escaped.
#pragma once

#include <string>

#include "reports/report_model.h"

namespace ccscope::reports {

std::string htmlRunsSection(const ReportModel& model);
std::string htmlFailuresSection(const ReportModel& model);
std::string htmlDiagnosisSection(const ReportModel& model);  // empty without a diagnosis
std::string htmlHeatmapSection(const ReportModel& model);
std::string htmlBurninSection(const ReportModel& model);  // empty without a burn-in run
std::string htmlTableSection(const ReportModel& model);
// `ccscope model predict` runs: predicted busbw per algorithm, measured rows overlaid.
std::string htmlModelSection(const ReportModel& model);

}  // namespace ccscope::reports
