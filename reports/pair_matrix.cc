#include "reports/pair_matrix.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ccscope::reports {

using core::Code;
using core::Status;
using nlohmann::json;

namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

Status need(const json& j, const char* key, json::value_t type) {
  const bool ok = j.contains(key) && (j[key].type() == type ||
                                      (type == json::value_t::number_float && j[key].is_number()));
  if (ok) return Status::ok();
  return Status(Code::kInvalidArgument,
                fmt::format("{} record: field '{}' is missing or of the wrong type",
                            j.value("type", "?"), key));
}

void keepBest(std::vector<std::vector<double>>& m, int a, int b, double v, bool larger) {
  double& cell = m[a][b];
  if (std::isnan(cell) || (larger ? v > cell : v < cell)) cell = m[b][a] = v;
}

}  // namespace

bool isPairRecord(const std::string& type) {
  return type == "pairs_run" || type == "pair" || type == "pair_verdict" || type == "pairs_summary";
}

std::string PairVerdict::text() const {
  const std::string what = kind == "host" ? fmt::format("host {}", unit_a)
                                          : fmt::format("link {} <-> {}", unit_a, unit_b);
  const std::string how =
      metric == "p99" ? fmt::format("p99 latency {:.3g}x predicted", share > 0 ? 1 / share : 0)
                      : fmt::format("bandwidth {:.3g}x predicted", share);
  return fmt::format("{} {}: {} ({:.1f} robust deviations out)", verdict, what, how, z);
}

int PairMatrix::unitIndex(const std::string& label) {
  auto it = std::find(units.begin(), units.end(), label);
  if (it != units.end()) return static_cast<int>(it - units.begin());
  return -1;
}

Status PairMatrix::add(const json& j) {
  const std::string type = j.value("type", "");
  if (type == "pairs_run") {
    CCSCOPE_RETURN_IF_ERROR(need(j, "units", json::value_t::array));
    scope = j.value("scope", "");
    transport = j.value("transport", "");
    units.clear();
    for (const json& u : j["units"])
      if (u.is_string()) units.push_back(u.get<std::string>());
    const size_t n = units.size();
    bw_gbps.assign(n, std::vector<double>(n, kNone));
    p99_us.assign(n, std::vector<double>(n, kNone));
    p50_us.assign(n, std::vector<double>(n, kNone));
    return Status::ok();
  }
  if (type == "pair") {
    for (const char* k : {"unit_a", "unit_b"})
      CCSCOPE_RETURN_IF_ERROR(need(j, k, json::value_t::string));
    for (const char* k : {"bw_uni_gbps", "p99_us"})
      CCSCOPE_RETURN_IF_ERROR(need(j, k, json::value_t::number_float));
    const int a = unitIndex(j["unit_a"]), b = unitIndex(j["unit_b"]);
    if (a < 0 || b < 0 || a == b)
      return Status(Code::kInvalidArgument,
                    "pair record: a unit that no pairs_run record before it lists");
    ++pairs;
    keepBest(bw_gbps, a, b, j["bw_uni_gbps"].get<double>(), true);
    keepBest(p99_us, a, b, j["p99_us"].get<double>(), false);
    if (j.contains("p50_us") && j["p50_us"].is_number())
      keepBest(p50_us, a, b, j["p50_us"].get<double>(), false);
    return Status::ok();
  }
  if (type == "pair_verdict") {
    for (const char* k : {"metric", "kind", "unit_a", "verdict"})
      CCSCOPE_RETURN_IF_ERROR(need(j, k, json::value_t::string));
    verdicts.push_back({j["metric"], j["kind"], j["unit_a"], j.value("unit_b", ""),
                        j.value("share", 1.0), j.value("z", 0.0), j["verdict"]});
  }
  return Status::ok();
}

}  // namespace ccscope::reports
