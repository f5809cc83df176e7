#include "reports/jsonl_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace ccscope::reports {

using core::Code;
using core::Status;
using nlohmann::json;

namespace {

Status fieldError(const char* key, const char* what) {
  return Status(Code::kInvalidArgument, fmt::format("field '{}' missing or not {}", key, what));
}

Status getString(const json& j, const char* key, std::string& out, bool required) {
  if (!j.contains(key)) return required ? fieldError(key, "a string") : Status::ok();
  if (!j[key].is_string()) return fieldError(key, "a string");
  out = j[key].get<std::string>();
  return Status::ok();
}

template <typename T>
Status getNumber(const json& j, const char* key, T& out, bool required) {
  if (!j.contains(key) || j[key].is_null())
    return required ? fieldError(key, "a number") : Status::ok();
  if (!j[key].is_number()) return fieldError(key, "a number");
  if constexpr (std::is_integral_v<T>) {
    if (!j[key].is_number_integer()) return fieldError(key, "an integer");
  }
  out = j[key].get<T>();
  return Status::ok();
}

Status getLatency(const json& j, LatencyStats& lat) {
  if (!j.contains("lat_us")) return Status::ok();
  const json& l = j["lat_us"];
  if (!l.is_object()) return fieldError("lat_us", "an object");
  const std::pair<const char*, double*> fields[] = {
      {"min", &lat.min}, {"p50", &lat.p50},   {"p90", &lat.p90},    {"p99", &lat.p99},
      {"max", &lat.max}, {"mean", &lat.mean}, {"stdev", &lat.stdev}};
  for (const auto& [key, dst] : fields) {
    Status s = getNumber(l, key, *dst, false);
    if (!s.isOk()) return s.prepend("lat_us");
  }
  if (!l.contains("hist")) return Status::ok();
  const json& h = l["hist"];
  if (!h.is_array()) return fieldError("lat_us.hist", "an array of [lower_us, count]");
  for (const json& b : h) {
    if (!b.is_array() || b.size() != 2 || !b[0].is_number() || !b[1].is_number_unsigned())
      return fieldError("lat_us.hist", "an array of [lower_us, count]");
    lat.hist.push_back({b[0].get<double>(), b[1].get<uint64_t>()});
  }
  return Status::ok();
}

std::vector<std::string> stringArray(const json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key) || !j[key].is_array()) return out;
  for (const auto& v : j[key])
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

std::map<std::string, std::string> stringMap(const json& j, const char* key) {
  std::map<std::string, std::string> out;
  if (!j.contains(key) || !j[key].is_object()) return out;
  for (const auto& [k, v] : j[key].items())
    if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

// A record that starts a run of its own, as a "run" record starts one.
RunRecords& startRun(std::vector<RunRecords>& runs, const std::string& stem) {
  runs.push_back(RunRecords{});
  runs.back().label = runs.size() == 1 ? stem : fmt::format("{}#{}", stem, runs.size());
  return runs.back();
}

// One record into `runs`; unknown types are skipped.
Status addRecord(const json& j, const std::string& stem, std::vector<RunRecords>& runs) {
  if (!j.is_object()) return Status(Code::kInvalidArgument, "record is not a JSON object");
  int schema = kSchemaVersion;
  CCSCOPE_RETURN_IF_ERROR(getNumber(j, "schema", schema, false));
  if (schema > kSchemaVersion)
    return Status(Code::kInvalidArgument,
                  fmt::format("schema {} is newer than this ccscope reads ({}): update ccscope",
                              schema, kSchemaVersion));
  std::string type;
  CCSCOPE_RETURN_IF_ERROR(getString(j, "type", type, true));
  auto current = [&]() -> RunRecords& {
    if (runs.empty())
      runs.push_back(
          RunRecords{stem, "", std::nullopt, {}, {}, std::nullopt, std::nullopt, std::nullopt});
    return runs.back();
  };
  if (type == "run") {
    CCSCOPE_ASSIGN_OR_RETURN(RunMetadata meta, runMetadataFromJson(j));
    const bool fresh = !runs.empty() && !runs.back().meta && !runs.back().pairs &&
                       !runs.back().model && !runs.back().burnin && runs.back().rows.empty();
    if (!fresh) runs.push_back(RunRecords{});
    runs.back().meta = std::move(meta);
    runs.back().label = runs.size() == 1 ? stem : fmt::format("{}#{}", stem, runs.size());
  } else if (type == "result") {
    CCSCOPE_ASSIGN_OR_RETURN(Measurement m, measurementFromJson(j));
    current().rows.push_back(std::move(m));
  } else if (type == "diagnosis") {
    CCSCOPE_ASSIGN_OR_RETURN(Diagnosis d, diagnosisFromJson(j));
    current().diagnoses.push_back(std::move(d));
  } else if (type == "pairs_run") {
    return startRun(runs, stem).pairs.emplace().add(j);
  } else if (type == "burnin_run") {
    return startRun(runs, stem).burnin.emplace().add(j);
  } else if (type == "model_run") {
    startRun(runs, stem).model = ModelRecords{j.value("topology", ""), j.value("source", ""), {}};
  } else if (type == "prediction") {
    if (!current().model)
      return Status(Code::kInvalidArgument, "a prediction record before any model_run");
    CCSCOPE_ASSIGN_OR_RETURN(PredictionRecord p, predictionFromJson(j));
    current().model->predictions.push_back(std::move(p));
  } else if (isBurninRecord(type)) {
    // The burn-in's own records follow its pairs and sweep runs: they belong to the burn-in.
    auto it = std::find_if(runs.rbegin(), runs.rend(),
                           [](const RunRecords& r) { return r.burnin.has_value(); });
    if (it == runs.rend())
      return Status(Code::kInvalidArgument, fmt::format("a {} record before any burnin_run", type));
    return it->burnin->add(j);
  } else if (isPairRecord(type)) {
    if (!current().pairs)
      return Status(Code::kInvalidArgument, fmt::format("a {} record before any pairs_run", type));
    return current().pairs->add(j);
  }
  return Status::ok();
}

// `ccscope analyze --json` writes one pretty-printed diagnosis, not JSON Lines: accept it whole.
bool addWholeDiagnosis(const std::string& text, const std::string& stem,
                       std::vector<RunRecords>& runs) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("verdict") || !j.contains("layer")) return false;
  if (j.contains("type") && j["type"] != "diagnosis") return false;
  auto d = diagnosisFromJson(j);
  if (!d) return false;
  runs.push_back(RunRecords{stem,
                            "",
                            std::nullopt,
                            {},
                            {std::move(d.value())},
                            std::nullopt,
                            std::nullopt,
                            std::nullopt});
  return true;
}

std::string stemOf(const std::string& name) {
  std::string stem = std::filesystem::path(name).stem().string();
  return stem.empty() ? name : stem;
}

}  // namespace

core::Result<Measurement> measurementFromJson(const json& j) {
  Measurement m;
  CCSCOPE_RETURN_IF_ERROR(getString(j, "collective", m.collective, true));
  CCSCOPE_RETURN_IF_ERROR(getString(j, "algorithm", m.algorithm, true));
  CCSCOPE_RETURN_IF_ERROR(getString(j, "transport", m.transport, true));
  CCSCOPE_RETURN_IF_ERROR(getString(j, "requested_algorithm", m.requested_algorithm, false));
  CCSCOPE_RETURN_IF_ERROR(getNumber(j, "bytes", m.bytes, true));
  CCSCOPE_RETURN_IF_ERROR(getNumber(j, "time_us", m.time_us, true));
  CCSCOPE_RETURN_IF_ERROR(getNumber(j, "algbw_gbps", m.algbw_gbps, true));
  CCSCOPE_RETURN_IF_ERROR(getNumber(j, "busbw_gbps", m.busbw_gbps, true));
  CCSCOPE_RETURN_IF_ERROR(getNumber(j, "ranks", m.ranks, false));
  CCSCOPE_RETURN_IF_ERROR(getNumber(j, "count", m.count, false));
  CCSCOPE_RETURN_IF_ERROR(getString(j, "dtype", m.dtype, false));
  CCSCOPE_RETURN_IF_ERROR(getString(j, "redop", m.redop, false));
  CCSCOPE_RETURN_IF_ERROR(getNumber(j, "root", m.root, false));
  CCSCOPE_RETURN_IF_ERROR(getNumber(j, "iters", m.iters, false));
  CCSCOPE_RETURN_IF_ERROR(getNumber(j, "busbw_factor", m.busbw_factor, false));
  CCSCOPE_RETURN_IF_ERROR(getNumber(j, "wrong", m.wrong, false));
  CCSCOPE_RETURN_IF_ERROR(getString(j, "buffers", m.buffers, false));
  CCSCOPE_RETURN_IF_ERROR(getString(j, "path", m.path, false));
  CCSCOPE_RETURN_IF_ERROR(getNumber(j, "device_time_us", m.device_time_us, false));
  CCSCOPE_RETURN_IF_ERROR(getNumber(j, "segment_bytes", m.segment_bytes, false));
  if (j.contains("in_place")) {
    if (!j["in_place"].is_boolean()) return fieldError("in_place", "a boolean");
    m.in_place = j["in_place"].get<bool>();
  }
  CCSCOPE_RETURN_IF_ERROR(getLatency(j, m.lat));
  return m;
}

core::Result<RunMetadata> runMetadataFromJson(const json& j) {
  RunMetadata m;
  CCSCOPE_RETURN_IF_ERROR(getString(j, "version", m.version, false));
  CCSCOPE_RETURN_IF_ERROR(getString(j, "collective", m.collective, false));
  CCSCOPE_RETURN_IF_ERROR(getString(j, "transport", m.transport, false));
  CCSCOPE_RETURN_IF_ERROR(getString(j, "launcher", m.launcher, false));
  CCSCOPE_RETURN_IF_ERROR(getString(j, "host_pages", m.host_pages, false));
  CCSCOPE_RETURN_IF_ERROR(getString(j, "start_time", m.start_time, false));
  CCSCOPE_RETURN_IF_ERROR(getNumber(j, "ranks", m.ranks, false));
  m.argv = stringArray(j, "argv");
  m.algorithms = stringArray(j, "algorithms");
  if (j.contains("interleaved")) {
    if (!j["interleaved"].is_boolean()) return fieldError("interleaved", "a boolean");
    m.interleaved = j["interleaved"].get<bool>();
  }
  m.hosts = stringArray(j, "hosts");
  m.libraries = stringMap(j, "libraries");
  m.env = stringMap(j, "env");
  return m;
}

core::Result<std::vector<RunRecords>> readResults(std::istream& in, const std::string& name) {
  std::vector<RunRecords> runs;
  const std::string stem = stemOf(name);
  std::string line;
  long line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = json::parse(line, nullptr, false);
    Status s = j.is_discarded() ? Status(Code::kInvalidArgument, "malformed JSON")
                                : addRecord(j, stem, runs);
    if (s.isOk()) continue;
    if (line_no == 1 && j.is_discarded()) {  // maybe one multi-line JSON document
      std::ostringstream rest;
      rest << line << '\n' << in.rdbuf();
      if (addWholeDiagnosis(rest.str(), stem, runs)) return runs;
    }
    return s.prepend(fmt::format("{}:{}", name, line_no));
  }
  if (in.bad()) return Status(Code::kSystem, fmt::format("{}: read error", name));
  if (runs.empty())
    return Status(Code::kInvalidArgument, fmt::format("{}: no records (empty file?)", name));
  return runs;
}

core::Result<std::vector<RunRecords>> readResultsFile(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return Status(Code::kInvalidArgument,
                  fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  auto runs = readResults(in, path);
  if (runs)
    for (auto& r : *runs) r.source = path;
  return runs;
}

core::Result<std::vector<RunRecords>> readResultsFiles(const std::vector<std::string>& paths) {
  std::vector<RunRecords> all;
  std::set<std::string> labels;
  for (const std::string& p : paths) {
    CCSCOPE_ASSIGN_OR_RETURN(std::vector<RunRecords> runs, readResultsFile(p));
    for (auto& r : runs) {
      std::string label = r.label;
      for (int k = 2; labels.count(label); ++k) label = fmt::format("{}~{}", r.label, k);
      labels.insert(label);
      r.label = label;
      all.push_back(std::move(r));
    }
  }
  return all;
}

}  // namespace ccscope::reports
