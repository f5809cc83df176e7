// The `model_fit` record: what `ccscope model fit --out` writes, one per transport, and what
// `ccscope model predict --fit` reads back (docs/model.md, "Records").
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "model/simulate.h"

namespace ccscope::app {

struct FitRecord {
  std::string transport;
  model::Params params;
  std::array<bool, model::kFeatures> fitted{};  // false: no row exercised it
  double llc_bytes = 0;                         // 0: no cache modelled
  double r2 = 0, max_abs_error = 0;
  size_t rows = 0;
  int cores = 0;  // CPUs the ranks of a host shared (0: not modelled)
  bool one_machine = false;
  uint64_t min_segment_bytes = uint64_t{64} << 10;  // the transport's (64 KiB: unknown)
};

// GB/s of a per-byte cost, as records and printouts give it (0: none).
double gbpsOf(double beta);

nlohmann::json fitRecordJson(const FitRecord& r);
// Fields it lacks keep their defaults (a record of another version still reads).
FitRecord fitRecordFromJson(const nlohmann::json& j);

}  // namespace ccscope::app
