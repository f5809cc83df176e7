// `ccscope model predict`'s records as a report reads them back: a `model_run` (the topology
// and where its figures come from) and its `prediction` rows (docs/model.md, "Records").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace ccscope::reports {

struct PredictionRecord {
  std::string collective, algorithm, method;
  int ranks = 0, hosts = 0;
  uint64_t bytes = 0;
  double time_us = 0, algbw_gbps = 0, busbw_gbps = 0;
  bool best = false;  // the fastest modelled algorithm at this size and rank count
};

struct ModelRecords {
  std::string topology, source;
  std::vector<PredictionRecord> predictions;
};

nlohmann::json predictionToJson(const PredictionRecord& p);
core::Result<PredictionRecord> predictionFromJson(const nlohmann::json& j);

}  // namespace ccscope::reports
