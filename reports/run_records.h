// The records of one run as a report sees them: its metadata, its result rows and any diagnosis,
// whether read back from JSON Lines (jsonl_reader.h) or collected live from `ccscope bench`
// through RecordCollector. Reports are built from these only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reports/burnin_records.h"
#include "reports/diagnosis.h"
#include "reports/measurement.h"
#include "reports/model_records.h"
#include "reports/pair_matrix.h"

namespace ccscope::reports {

struct RunRecords {
  std::string label;   // names the run in series and tables: file stem, "stem#2" for a 2nd run
  std::string source;  // file the records came from; empty when collected live
  std::optional<RunMetadata> meta;
  std::vector<Measurement> rows;
  std::vector<Diagnosis> diagnoses;
  std::optional<PairMatrix> pairs;      // a `ccscope pairs` run
  std::optional<BurninRecords> burnin;  // a `ccscope burnin` run (its pairs and sweeps: runs of
                                        // their own that follow it)
  std::optional<ModelRecords> model;    // `ccscope model predict`'s predictions
};

// A ResultSink that keeps everything it receives, so `ccscope bench --html ...` can write the
// same reports as `ccscope report` at the end of a run.
class RecordCollector : public ResultSink {
 public:
  explicit RecordCollector(std::string label = "run") : label_(std::move(label)) {}
  void onRun(const RunMetadata& m) override {
    runs_.push_back(
        RunRecords{runs_.empty() ? label_ : label_ + "#" + std::to_string(runs_.size() + 1),
                   "",
                   m,
                   {},
                   {},
                   std::nullopt,
                   std::nullopt,
                   std::nullopt});
  }
  void onMeasurement(const Measurement& m) override { current().rows.push_back(m); }
  void addDiagnosis(const Diagnosis& d) { current().diagnoses.push_back(d); }
  const std::vector<RunRecords>& runs() const { return runs_; }

 private:
  RunRecords& current() {
    if (runs_.empty())
      runs_.push_back(
          RunRecords{label_, "", std::nullopt, {}, {}, std::nullopt, std::nullopt, std::nullopt});
    return runs_.back();
  }
  std::string label_;
  std::vector<RunRecords> runs_;
};

}  // namespace ccscope::reports
