#include "reports/html_writer.h"

#include <fmt/format.h>

#include "reports/html_sections.h"
#include "reports/markdown_writer.h"
#include "reports/svg_chart.h"
#include "reports/text_escape.h"

namespace ccscope::reports {

namespace {

constexpr const char* kStyle = R"css(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;
  max-width:1200px;padding:0 16px;color:#222}
h1{font-size:22px;margin:0 0 8px}
h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}
.verdict{padding:10px 14px;border-radius:6px;font-weight:600;font-size:16px}
.verdict.pass{background:#e6f4ea;color:#1e7e34;border:1px solid #a8d5b5}
.verdict.fail{background:#fdecea;color:#b3261e;border:1px solid #f1aeb5}
table{border-collapse:collapse;font-size:12.5px}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:left}
th{background:#f5f5f5;position:sticky;top:0}table.rows td{white-space:nowrap}
svg{max-width:100%;height:auto}td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.fail-wrong td{background:#fbd5d5}
tr.fail-threshold td{background:#ffe8cc}
tr.fail-regression td{background:#fff3bf}
td.worse{color:#b3261e;font-weight:600}ul.failures li{color:#b3261e}
.charts{display:flex;flex-wrap:wrap;gap:12px}figure.chart{margin:0}
svg .grid{stroke:#e4e4e4;stroke-width:1}svg .tick{font-size:11px;fill:#555}
svg .axis-label{font-size:12px;fill:#333}svg .chart-title{font-size:14px;font-weight:600;fill:#222}
svg .series-line{stroke-width:2}svg .baseline-line{stroke-width:1.5;opacity:.8}
svg .pt{stroke:#fff;stroke-width:1}svg .pt:hover{r:6}svg .baseline-pt{opacity:.7}
svg .band-p99{opacity:.22}
svg .band-max{opacity:.1}
svg g.series.dim{opacity:.15}
svg g.series.hidden{display:none}
ul.legend{list-style:none;padding:0;margin:4px 0 0 70px;display:flex;flex-wrap:wrap;gap:4px 16px;
  font-size:12.5px}
ul.legend li{cursor:pointer;user-select:none}
ul.legend li.off{opacity:.4;text-decoration:line-through}
.swatch{display:inline-block;width:14px;height:4px;margin-right:5px;vertical-align:middle}
.dash{color:#777}.diagnosis{border-left:4px solid #b3261e;padding:4px 12px;background:#fff8f7}
.diagnosis.conclusive .verdict{font-weight:600}.placeholder{color:#777}
@media print{body{margin:0;max-width:none}th{position:static}details{display:none}
  ul.legend li{cursor:default}}
)css";

// Legend entries toggle (click) and highlight (hover) their series; nothing else runs.
constexpr const char* kScript = R"js(
document.querySelectorAll('figure.chart').forEach(function (fig) {
  var groups = fig.querySelectorAll('g.series');
  fig.querySelectorAll('ul.legend li').forEach(function (li) {
    var g = groups[Number(li.dataset.index)];
    li.addEventListener('click', function () {
      g.classList.toggle('hidden');
      li.classList.toggle('off');
    });
    li.addEventListener('mouseenter', function () {
      groups.forEach(function (o) { if (o !== g) o.classList.add('dim'); });
    });
    li.addEventListener('mouseleave', function () {
      groups.forEach(function (o) { o.classList.remove('dim'); });
    });
  });
});
)js";

std::string pointTip(const ReportModel& model, const ReportRow& r, const Series& s) {
  std::string tip = fmt::format(
      "{}\n{} ({} B), {}\nbusbw {:.3f} GB/s, algbw {:.3f} GB/s\n"
      "time {:.2f} us; p50 {:.2f}, p99 {:.2f}, max {:.2f} us",
      s.name, shortBytes(double(r.m.bytes)), r.m.bytes, r.m.in_place ? "in-place" : "out-of-place",
      r.m.busbw_gbps, r.m.algbw_gbps, r.m.time_us, r.m.lat.p50, r.m.lat.p99, r.m.lat.max);
  if (r.baseline)
    tip += fmt::format("\nbaseline busbw {:.3f} GB/s, p50 {:.2f} us", r.baseline->base.busbw_gbps,
                       r.baseline->base.lat.p50);
  for (const RowFailure& f : r.failures)
    tip += fmt::format("\n{}: {}", failureKindName(f.kind), f.message);
  (void)model;
  return tip;
}

ChartSeries busbwSeries(const ReportModel& model, const Series& s) {
  ChartSeries out{s.name, {}, {}, {}};
  for (size_t i : s.points) {
    const ReportRow& r = model.rows[i];
    out.points.push_back({double(r.m.bytes), r.m.busbw_gbps, pointTip(model, r, s)});
    if (r.baseline)
      out.baseline.push_back({double(r.m.bytes), r.baseline->base.busbw_gbps,
                              fmt::format("baseline {}\n{} B: busbw {:.3f} GB/s", s.name, r.m.bytes,
                                          r.baseline->base.busbw_gbps)});
  }
  return out;
}

ChartSeries latencySeries(const ReportModel& model, const Series& s) {
  ChartSeries out{s.name, {}, {}, {}};
  ChartBand p99{"band-p99", {}, {}, {}, s.name + ": p50 to p99 latency"};
  ChartBand max{"band-max", {}, {}, {}, s.name + ": p99 to max latency"};
  for (size_t i : s.points) {
    const ReportRow& r = model.rows[i];
    const double x = double(r.m.bytes);
    out.points.push_back({x, r.m.lat.p50, pointTip(model, r, s)});
    p99.x.push_back(x), p99.lo.push_back(r.m.lat.p50), p99.hi.push_back(r.m.lat.p99);
    max.x.push_back(x), max.lo.push_back(r.m.lat.p99), max.hi.push_back(r.m.lat.max);
    if (r.baseline)
      out.baseline.push_back({x, r.baseline->base.lat.p50,
                              fmt::format("baseline {}\n{} B: p50 {:.2f} us", s.name, r.m.bytes,
                                          r.baseline->base.lat.p50)});
  }
  out.bands = {max, p99};
  return out;
}

std::string chartsSection(const ReportModel& model) {
  std::string out;
  for (size_t c = 0; c < model.collectives.size(); ++c) {
    const std::string& coll = model.collectives[c];
    ChartSpec bw{fmt::format("busbw-{}", c),
                 coll + ": bus bandwidth",
                 "message size (bytes per rank)",
                 "busbw (GB/s)",
                 false,
                 780,
                 360,
                 {}};
    ChartSpec lat{fmt::format("latency-{}", c),
                  coll + ": per-iteration latency (p50, band to p99 and max)",
                  "message size (bytes per rank)",
                  "latency (us, log scale)",
                  true,
                  780,
                  360,
                  {}};
    for (const Series& s : model.series) {
      if (s.collective != coll || s.points.empty()) continue;
      bw.series.push_back(busbwSeries(model, s));
      lat.series.push_back(latencySeries(model, s));
    }
    out += fmt::format(
        "<section class=\"collective\" data-collective=\"{}\"><h2>{}</h2>\n"
        "<div class=\"charts\">\n{}{}</div></section>\n",
        xmlEscape(coll), xmlEscape(coll), renderChart(bw), renderChart(lat));
  }
  return out;
}

}  // namespace

void writeHtml(const ReportModel& model, std::ostream& out) {
  std::string title = "ccscope report";
  if (!model.collectives.empty()) title += ": " + model.collectives.front();
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
         "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      << fmt::format("<title>{}</title>\n<style>{}</style></head>\n<body>\n", xmlEscape(title),
                     kStyle);
  out << fmt::format("<h1>{}</h1>\n<p class=\"verdict {}\" id=\"verdict\">{}</p>\n",
                     xmlEscape(title), model.passed() ? "pass" : "fail",
                     xmlEscape(verdictLine(model)));
  if (model.has_baseline)
    out << fmt::format(
        "<p>Baseline: <code>{}</code>, tolerance {:g}% beyond the per-iteration noise; "
        "{} rows without a baseline row.</p>\n",
        xmlEscape(model.baseline_source), model.criteria.tolerance * 100, model.unmatched_rows);
  out << htmlRunsSection(model) << htmlFailuresSection(model) << htmlDiagnosisSection(model)
      << chartsSection(model) << htmlModelSection(model) << htmlHeatmapSection(model)
      << htmlBurninSection(model) << htmlTableSection(model);
  out << "<footer><p>Bandwidth in GB/s (10<sup>9</sup> B/s); times in microseconds; busbw as in "
         "nccl-tests. Hover a point for its values; click a legend entry to hide its series.</p>"
         "</footer>\n<script>"
      << kScript << "</script>\n</body></html>\n";
}

}  // namespace ccscope::reports
