// Per-iteration latency distribution: min, percentiles (nearest rank), max, mean, stdev.
#pragma once

#include <vector>

#include "reports/measurement.h"

namespace ccscope::bench {

reports::LatencyStats latencyStats(std::vector<double> samples_us);

}  // namespace ccscope::bench
