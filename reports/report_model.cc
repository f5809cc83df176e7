#include "reports/report_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace ccscope::reports {

const char* failureKindName(FailureKind k) {
  switch (k) {
    case FailureKind::kWrongResults:
      return "wrong-results";
    case FailureKind::kThreshold:
      return "threshold";
    case FailureKind::kRegression:
      return "regression";
  }
  return "?";
}

bool ReportRow::has(FailureKind k) const {
  return std::any_of(failures.begin(), failures.end(),
                     [k](const RowFailure& f) { return f.kind == k; });
}

size_t ReportModel::count(FailureKind k) const {
  return std::count_if(rows.begin(), rows.end(), [k](const ReportRow& r) { return r.has(k); });
}

size_t ReportModel::failedRows() const {
  return std::count_if(rows.begin(), rows.end(), [](const ReportRow& r) { return r.failed(); });
}

std::vector<std::string> ReportModel::failureLines() const {
  std::vector<std::string> out;
  for (const ReportRow& r : rows)
    for (const RowFailure& f : r.failures)
      out.push_back(fmt::format("{}: {}: {}: {}", runs[r.run].label, rowName(r.m),
                                failureKindName(f.kind), f.message));
  for (const std::string& l : unmatched_limits) out.push_back(l);
  for (const RunRecords& r : runs)
    if (r.pairs)
      for (const PairVerdict& v : r.pairs->verdicts)
        out.push_back(fmt::format("{}: pairs: {}", r.label, v.text()));
  for (const RunRecords& r : runs) {
    if (!r.burnin) continue;
    if (r.burnin->verdict.empty())
      out.push_back(
          fmt::format("{}: burnin: no summary: the run ended before its verdict", r.label));
    for (const std::string& why : r.burnin->reasons)
      out.push_back(fmt::format("{}: burnin: invalid: {}", r.label, why));
    // The pairs phase's verdicts are its pairs run's lines already.
    for (const BurninFindingRecord& f : r.burnin->findings)
      if (f.phase != "pairs") out.push_back(fmt::format("{}: burnin: {}", r.label, f.text()));
  }
  return out;
}

size_t ReportModel::burninFailures() const {
  return std::count_if(runs.begin(), runs.end(),
                       [](const RunRecords& r) { return r.burnin && r.burnin->failed(); });
}

size_t ReportModel::pairVerdicts() const {
  size_t n = 0;
  for (const RunRecords& r : runs)
    if (r.pairs) n += r.pairs->verdicts.size();
  return n;
}

std::vector<const Diagnosis*> ReportModel::diagnoses() const {
  std::vector<const Diagnosis*> out;
  for (const RunRecords& r : runs)
    for (const Diagnosis& d : r.diagnoses) out.push_back(&d);
  return out;
}

namespace {

// Series names get a dtype/op suffix only where one run mixes several of them.
bool runMixesTypes(const RunRecords& run) {
  std::set<std::string> combos;
  for (const Measurement& m : run.rows) combos.insert(m.dtype + " " + m.redop);
  return combos.size() > 1;
}

void assignSeries(ReportModel& model) {
  std::map<std::string, size_t> index;
  std::vector<bool> mixes;
  for (const RunRecords& r : model.runs) mixes.push_back(runMixesTypes(r));
  for (size_t i = 0; i < model.rows.size(); ++i) {
    ReportRow& row = model.rows[i];
    std::string name = fmt::format("{} · {}", row.m.transport, askedAlgorithm(row.m));
    if (model.runs.size() > 1) name = fmt::format("{} · {}", model.runs[row.run].label, name);
    if (mixes[row.run]) name += fmt::format(" · {} {}", row.m.dtype, row.m.redop);
    const std::string key = fmt::format("{}|{}|{}", row.run, row.m.collective, name);
    auto [it, fresh] = index.emplace(key, model.series.size());
    if (fresh) model.series.push_back(Series{name, row.m.collective, row.run, {}});
    row.series = it->second;
    if (std::find(model.collectives.begin(), model.collectives.end(), row.m.collective) ==
        model.collectives.end())
      model.collectives.push_back(row.m.collective);
  }
}

void assignPoints(ReportModel& model) {
  for (size_t s = 0; s < model.series.size(); ++s) {
    std::vector<size_t> oop, ip;
    for (size_t i = 0; i < model.rows.size(); ++i)
      if (model.rows[i].series == s) (model.rows[i].m.in_place ? ip : oop).push_back(i);
    std::vector<size_t>& pts = oop.empty() ? ip : oop;
    std::stable_sort(pts.begin(), pts.end(), [&](size_t a, size_t b) {
      return model.rows[a].m.bytes < model.rows[b].m.bytes;
    });
    pts.erase(std::unique(pts.begin(), pts.end(),
                          [&](size_t a, size_t b) {
                            return model.rows[a].m.bytes == model.rows[b].m.bytes;
                          }),
              pts.end());
    model.series[s].points = std::move(pts);
  }
}

void checkRow(ReportRow& row, const Criteria& c, const std::map<std::string, Measurement>& base,
              bool has_baseline, size_t& unmatched) {
  if (row.m.wrong > 0)
    row.failures.push_back({FailureKind::kWrongResults,
                            fmt::format("{} wrong elements (results not exact)", row.m.wrong)});
  for (const Threshold& t : c.limits)
    if (auto msg = checkThreshold(t, row.m))
      row.failures.push_back({FailureKind::kThreshold, *msg});
  if (!has_baseline) return;
  auto it = base.find(rowKey(row.m));
  if (it == base.end()) {
    ++unmatched;
    return;
  }
  row.baseline = compareToBaseline(row.m, it->second, c.tolerance);
  if (row.baseline->regressed())
    row.failures.push_back({FailureKind::kRegression, row.baseline->describe()});
}

}  // namespace

ReportModel buildReportModel(std::vector<RunRecords> runs, const std::vector<RunRecords>& baseline,
                             bool has_baseline, const Criteria& criteria) {
  ReportModel model;
  model.runs = std::move(runs);
  model.criteria = criteria;
  model.has_baseline = has_baseline;
  std::map<std::string, Measurement> base;  // first occurrence of each key wins
  for (const RunRecords& r : baseline) {
    if (model.baseline_source.empty())
      model.baseline_source = r.source.empty() ? r.label : r.source;
    for (const Measurement& m : r.rows) base.emplace(rowKey(m), m);
  }
  for (size_t run = 0; run < model.runs.size(); ++run)
    for (const Measurement& m : model.runs[run].rows)
      model.rows.push_back(ReportRow{run, 0, m, {}, {}});
  std::vector<bool> limit_used(criteria.limits.size(), false);
  for (ReportRow& row : model.rows) {
    checkRow(row, criteria, base, has_baseline, model.unmatched_rows);
    for (size_t t = 0; t < criteria.limits.size(); ++t)
      if (criteria.limits[t].bytes == row.m.bytes) limit_used[t] = true;
  }
  for (size_t t = 0; t < criteria.limits.size(); ++t)
    if (!limit_used[t])
      model.unmatched_limits.push_back(
          fmt::format("{}: no row has size {} B, so the limit checked nothing",
                      thresholdName(criteria.limits[t]), criteria.limits[t].bytes));
  assignSeries(model);
  assignPoints(model);
  return model;
}

}  // namespace ccscope::reports
