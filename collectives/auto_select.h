// `--algo auto`: a Hockney alpha-beta-gamma model fitted by a short calibration on the transport
// in use (all ranks together, well under 2 s), then, per size and rank count, the algorithm with
// the cheapest predicted time. The prediction of every candidate is kept so each row can say why.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collectives/algorithms.h"
#include "core/status.h"
#include "transports/transport.h"

namespace ccscope::collectives {

struct Calibration {
  CostParams cost;
  double seconds = 0;  // how long calibrating took
};

// Collective over all ranks of `t`; `max_over_ranks` reduces a vector to its elementwise max.
core::Result<Calibration> calibrate(transports::Transport& t,
                                    const std::function<core::Status(std::span<double>)>& max_over_ranks,
                                    core::Deadline deadline);

struct Choice {
  const AlgorithmInfo* algo = nullptr;
  std::vector<std::pair<std::string, double>> predicted_s;  // every candidate, cheapest first
  std::string explain() const;  // "rabenseifner 12.1 us < ring 15.3 us < tree 20.0 us"
};

Choice choose(Collective c, int ranks, double bytes, const CostParams& cost);

}  // namespace ccscope::collectives
