// The report's model section: per collective and rank count, the predicted busbw of every
// modelled algorithm against size, and the measured rows of the same collective and rank count
// (from the other runs given to `ccscope report`) overlaid as their own series.
#include <fmt/format.h>

#include <map>
#include <set>
#include <tuple>

#include "reports/html_sections.h"
#include "reports/svg_chart.h"
#include "reports/text_escape.h"

namespace ccscope::reports {

namespace {

constexpr size_t kMaxCharts = 12;

ChartSeries measuredSeries(const ReportModel& model, const std::string& coll, int ranks,
                           const std::string& algo) {
  ChartSeries s{fmt::format("{} measured", algo), {}, {}, {}};
  for (const auto& run : model.runs)
    for (const auto& m : run.rows)
      if (m.collective == coll && m.ranks == ranks && m.algorithm == algo && !m.in_place &&
          m.busbw_gbps > 0)  // out of place, as nccl-tests' headline figures
        s.points.push_back({static_cast<double>(m.bytes), m.busbw_gbps,
                            fmt::format("{} {} measured ({}): {:.3g} GB/s", algo,
                                        shortBytes(double(m.bytes)), run.label, m.busbw_gbps)});
  return s;
}

std::string chartFor(const ReportModel& model, const ModelRecords& rec, const std::string& coll,
                     int ranks, size_t index) {
  ChartSpec spec;
  spec.id = fmt::format("model-{}", index);
  spec.title = fmt::format("{} on {} ranks: predicted ({})", coll, ranks, rec.topology);
  spec.x_label = "size per rank (bytes)";
  spec.y_label = "busbw (GB/s)";
  std::map<std::string, ChartSeries> by_algo;
  for (const auto& p : rec.predictions) {
    if (p.collective != coll || p.ranks != ranks || p.busbw_gbps <= 0) continue;
    auto& s = by_algo[p.algorithm];
    s.name = p.algorithm + " predicted";
    s.points.push_back(
        {static_cast<double>(p.bytes), p.busbw_gbps,
         fmt::format("{} {} predicted ({}): {:.3g} GB/s, {:.4g} us", p.algorithm,
                     shortBytes(double(p.bytes)), p.method, p.busbw_gbps, p.time_us)});
  }
  for (auto& [algo, s] : by_algo) {
    spec.series.push_back(std::move(s));
    ChartSeries m = measuredSeries(model, coll, ranks, algo);
    if (!m.points.empty()) spec.series.push_back(std::move(m));
  }
  return renderChart(spec);
}

}  // namespace

std::string htmlModelSection(const ReportModel& model) {
  std::string out;
  size_t charts = 0;
  for (const auto& run : model.runs) {
    if (!run.model) continue;
    const ModelRecords& rec = *run.model;
    out += fmt::format("<section class=\"model\"><h2>Model: {}</h2>\n<p>{}</p>\n",
                       xmlEscape(rec.topology), xmlEscape(rec.source));
    // Rank counts with measured rows first: those are the charts that check the model.
    std::set<std::tuple<bool, std::string, int>> keys;
    for (const auto& p : rec.predictions) {
      bool measured = !measuredSeries(model, p.collective, p.ranks, p.algorithm).points.empty();
      keys.insert({!measured, p.collective, p.ranks});
    }
    out += "<div class=\"charts\">\n";
    for (const auto& [unmeasured, coll, ranks] : keys) {
      if (charts == kMaxCharts) break;
      out += chartFor(model, rec, coll, ranks, charts++);
    }
    out += "</div></section>\n";
  }
  return out;
}

}  // namespace ccscope::reports
