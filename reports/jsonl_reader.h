// Reads results back from JSON Lines (docs/output-format.md): "run" records start a run,
// "result" records are its rows, "diagnosis" records attach to it; records of unknown types are
// skipped so newer writers stay readable. Every error names file:line.
#pragma once

#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "reports/run_records.h"

namespace ccscope::reports {

core::Result<Measurement> measurementFromJson(const nlohmann::json& j);
core::Result<RunMetadata> runMetadataFromJson(const nlohmann::json& j);

// `name` labels the runs (file stem) and prefixes errors ("a.jsonl:7: ...").
core::Result<std::vector<RunRecords>> readResults(std::istream& in, const std::string& name);
core::Result<std::vector<RunRecords>> readResultsFile(const std::string& path);

// Runs of several files in order; labels made unique across files ("a", "b", "a~2").
core::Result<std::vector<RunRecords>> readResultsFiles(const std::vector<std::string>& paths);

}  // namespace ccscope::reports
