#include "reports/model_records.h"

#include <fmt/format.h>

namespace ccscope::reports {

using core::Code;
using core::Status;
using nlohmann::json;

json predictionToJson(const PredictionRecord& p) {
  return json{{"type", "prediction"},
              {"collective", p.collective},
              {"algorithm", p.algorithm},
              {"method", p.method},
              {"ranks", p.ranks},
              {"hosts", p.hosts},
              {"bytes", p.bytes},
              {"time_us", p.time_us},
              {"algbw_gbps", p.algbw_gbps},
              {"busbw_gbps", p.busbw_gbps},
              {"best", p.best}};
}

core::Result<PredictionRecord> predictionFromJson(const json& j) {
  PredictionRecord p;
  try {
    p.collective = j.at("collective").get<std::string>();
    p.algorithm = j.at("algorithm").get<std::string>();
    p.method = j.value("method", "");
    p.ranks = j.at("ranks").get<int>();
    p.hosts = j.value("hosts", 0);
    p.bytes = j.at("bytes").get<uint64_t>();
    p.time_us = j.at("time_us").get<double>();
    p.algbw_gbps = j.value("algbw_gbps", 0.0);
    p.busbw_gbps = j.at("busbw_gbps").get<double>();
    p.best = j.value("best", false);
  } catch (const json::exception& e) {
    return Status(Code::kInvalidArgument, fmt::format("prediction record: {}", e.what()));
  }
  return p;
}

}  // namespace ccscope::reports
