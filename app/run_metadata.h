// Builds the "run" record: version, argv, hosts, libraries, start time and the selected
// environment variables (never the job token).
#pragma once

#include <string>
#include <vector>

#include "bench/bench_config.h"
#include "reports/measurement.h"

namespace ccscope::app {

reports::RunMetadata makeRunMetadata(const bench::BenchConfig& cfg,
                                     const std::vector<std::string>& argv,
                                     const std::vector<std::string>& hosts,
                                     const std::string& launcher, const std::string& transport);
std::string hostName();

}  // namespace ccscope::app
