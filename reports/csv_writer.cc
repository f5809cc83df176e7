#include "reports/csv_writer.h"

#include <fmt/format.h>

#include <functional>

#include "reports/text_escape.h"

namespace ccscope::reports {

namespace {

struct Column {
  const char* name;
  std::function<std::string(const ReportModel&, const ReportRow&)> value;
};

std::string num(double v) { return fmt::format("{}", v); }

std::string baseValue(const ReportRow& r, size_t metric) {
  return r.baseline ? num(r.baseline->deltas[metric].base) : std::string();
}

std::string failureText(const ReportRow& r) {
  std::string out;
  for (const RowFailure& f : r.failures)
    appendItem(out, "; ", std::string(failureKindName(f.kind)) + ": " + f.message);
  return out;
}

const std::vector<Column>& columns() {
  using M = const ReportModel&;
  using R = const ReportRow&;
  static const std::vector<Column> kColumns = {
      {"run", [](M m, R r) { return m.runs[r.run].label; }},
      {"collective", [](M, R r) { return r.m.collective; }},
      {"algorithm", [](M, R r) { return r.m.algorithm; }},
      {"requested_algorithm", [](M, R r) { return askedAlgorithm(r.m); }},
      {"transport", [](M, R r) { return r.m.transport; }},
      {"ranks", [](M, R r) { return std::to_string(r.m.ranks); }},
      {"bytes_B", [](M, R r) { return std::to_string(r.m.bytes); }},
      {"count_elements", [](M, R r) { return std::to_string(r.m.count); }},
      {"dtype", [](M, R r) { return r.m.dtype; }},
      {"redop", [](M, R r) { return r.m.redop; }},
      {"root", [](M, R r) { return std::to_string(r.m.root); }},
      {"in_place", [](M, R r) { return std::string(r.m.in_place ? "true" : "false"); }},
      {"iters", [](M, R r) { return std::to_string(r.m.iters); }},
      {"time_us", [](M, R r) { return num(r.m.time_us); }},
      {"algbw_GBps", [](M, R r) { return num(r.m.algbw_gbps); }},
      {"busbw_GBps", [](M, R r) { return num(r.m.busbw_gbps); }},
      {"busbw_factor", [](M, R r) { return num(r.m.busbw_factor); }},
      {"wrong_elements", [](M, R r) { return std::to_string(r.m.wrong); }},
      {"lat_min_us", [](M, R r) { return num(r.m.lat.min); }},
      {"lat_p50_us", [](M, R r) { return num(r.m.lat.p50); }},
      {"lat_p90_us", [](M, R r) { return num(r.m.lat.p90); }},
      {"lat_p99_us", [](M, R r) { return num(r.m.lat.p99); }},
      {"lat_max_us", [](M, R r) { return num(r.m.lat.max); }},
      {"lat_mean_us", [](M, R r) { return num(r.m.lat.mean); }},
      {"lat_stdev_us", [](M, R r) { return num(r.m.lat.stdev); }},
      {"baseline_busbw_GBps", [](M, R r) { return baseValue(r, 0); }},
      {"baseline_lat_p50_us", [](M, R r) { return baseValue(r, 1); }},
      {"baseline_lat_p99_us", [](M, R r) { return baseValue(r, 2); }},
      {"verdict", [](M, R r) { return std::string(r.failed() ? "fail" : "pass"); }},
      {"failures", [](M, R r) { return failureText(r); }},
  };
  return kColumns;
}

}  // namespace

std::vector<std::string> csvHeader() {
  std::vector<std::string> out;
  for (const Column& c : columns()) out.push_back(c.name);
  return out;
}

void writeCsv(const ReportModel& model, std::ostream& out) {
  std::string line;
  for (const Column& c : columns()) appendItem(line, ",", c.name);
  out << line << "\n";
  for (const ReportRow& row : model.rows) {
    line.clear();
    bool first = true;
    for (const Column& c : columns()) {
      if (!first) line += ',';
      first = false;
      line += csvField(c.value(model, row));
    }
    out << line << "\n";
  }
}

}  // namespace ccscope::reports
