// JSON Lines output (schema in docs/output-format.md): one "run" record, then one "result"
// record per size x algorithm x placement, each written and flushed as soon as it exists, so a
// run killed half-way keeps every finished row.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "reports/measurement.h"

namespace ccscope::reports {

nlohmann::json toJson(const Measurement& m);
nlohmann::json toJson(const RunMetadata& m);

class JsonLinesWriter : public ResultSink {
 public:
  static core::Result<std::unique_ptr<JsonLinesWriter>> open(const std::string& path);
  ~JsonLinesWriter() override;
  void onRun(const RunMetadata& m) override { write(toJson(m)); }
  void onMeasurement(const Measurement& m) override { write(toJson(m)); }
  // The lines above the table (what a transport or auto chose): {"type": "note", "text": ...}.
  void onSection(const std::string& title) override {
    write(nlohmann::json{{"type", "note"}, {"schema", kSchemaVersion}, {"text", title}});
  }
  // Any other record (e.g. a diagnosis); it must carry a "type" field.
  void write(const nlohmann::json& record);

 private:
  explicit JsonLinesWriter(std::FILE* f) : f_(f) {}
  std::FILE* f_;
};

}  // namespace ccscope::reports
