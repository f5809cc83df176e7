// The HTML report's pair-matrix section: for each `ccscope pairs` run, the one-way bandwidth and
// p99 matrices with hosts ordered slowest first (so an outlier's row and column lead), each cell
// coloured by its share of the matrix's median, and the verdicts.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/robust.h"
#include "reports/html_sections.h"
#include "reports/text_escape.h"

namespace ccscope::reports {

namespace {

// Past this many units a matrix is shown for the slowest ones only: 1,024 hosts would be a
// million cells per matrix.
constexpr size_t kMaxUnitsShown = 64;

double medianOf(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  return v.empty() ? std::nan("") : core::medianInPlace(v);
}

// Units by the median of their row, ascending: the slowest host first.
std::vector<size_t> slowestFirst(const std::vector<std::vector<double>>& m) {
  std::vector<size_t> order(m.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<double> key(m.size());
  for (size_t i = 0; i < m.size(); ++i) key[i] = medianOf(m[i]);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return std::isnan(key[y]) ? !std::isnan(key[x]) : key[x] < key[y];
  });
  return order;
}

// Red at 0 of the median, green from the median up.
std::string cell(double v, double share, const char* fmt_spec) {
  if (std::isnan(v)) return "<td class=\"none\"></td>";
  const double hue = 120 * std::clamp(share, 0.0, 1.0);
  return fmt::format(
      "<td style=\"background:hsl({:.0f},70%,80%)\" title=\"{:.2f}x median\">{}</td>", hue, share,
      fmt::format(fmt::runtime(fmt_spec), v));
}

std::string matrixTable(const PairMatrix& p, const std::vector<std::vector<double>>& m,
                        const std::vector<size_t>& order, bool lower_is_better, const char* title,
                        const char* fmt_spec) {
  std::vector<double> all;
  for (const auto& row : m) all.insert(all.end(), row.begin(), row.end());
  const double med = medianOf(all);
  std::string out = fmt::format("<h4>{} (median {})</h4>\n<table class=\"matrix\"><tr><th></th>",
                                title, fmt::format(fmt::runtime(fmt_spec), med));
  for (size_t c = 0; c < order.size(); ++c)
    out += fmt::format("<th title=\"{}\">{}</th>", xmlEscape(p.units[order[c]]), c + 1);
  out += "</tr>\n";
  for (size_t r = 0; r < order.size(); ++r) {
    out += fmt::format("<tr><th>{} {}</th>", r + 1, xmlEscape(p.units[order[r]]));
    for (size_t c : order) {
      const double v = m[order[r]][c];
      out += cell(v, lower_is_better ? med / v : v / med, fmt_spec);
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string runMatrices(const RunRecords& run) {
  const PairMatrix& p = *run.pairs;
  std::string out = fmt::format("<h3>{}: {} units, scope {}, over {}, {} pairs measured</h3>\n",
                                xmlEscape(run.label), p.units.size(), xmlEscape(p.scope),
                                xmlEscape(p.transport), p.pairs);
  if (p.verdicts.empty()) {
    out += "<p class=\"pass\">No host or link at fault.</p>\n";
  } else {
    out += "<ul class=\"verdicts\">\n";
    for (const PairVerdict& v : p.verdicts)
      out += fmt::format("<li>{}</li>\n", xmlEscape(v.text()));
    out += "</ul>\n";
  }
  std::vector<size_t> order = slowestFirst(p.bw_gbps);
  if (order.size() > kMaxUnitsShown) {
    out += fmt::format("<p>The {} slowest of {} units (by median bandwidth).</p>\n", kMaxUnitsShown,
                       order.size());
    order.resize(kMaxUnitsShown);
  }
  out += matrixTable(p, p.bw_gbps, order, false, "One-way bandwidth, GB/s", "{:.3g}");
  out += matrixTable(p, p.p99_us, order, true, "p99 latency, us", "{:.0f}");
  return out;
}

}  // namespace

std::string htmlHeatmapSection(const ReportModel& model) {
  std::string body;
  for (const RunRecords& run : model.runs)
    if (run.pairs) body += runMatrices(run);
  if (body.empty())
    return "<section id=\"heatmap\" class=\"heatmap\" data-state=\"empty\"><h2>Pair matrix</h2>\n"
           "<p class=\"placeholder\">No pair-matrix records in these results. A heatmap of "
           "per-pair bandwidth and latency appears here for results of "
           "<code>ccscope pairs</code>.</p></section>\n";
  return "<section id=\"heatmap\" class=\"heatmap\" data-state=\"filled\"><h2>Pair matrix</h2>\n"
         "<p>Hosts ordered by their median bandwidth, slowest first; colour: share of the "
         "matrix's median (red 0, green 1 and above).</p>\n" +
         body + "</section>\n";
}

}  // namespace ccscope::reports
