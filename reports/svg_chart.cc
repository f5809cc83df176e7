#include "reports/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "reports/text_escape.h"

namespace ccscope::reports {

namespace {

constexpr double kLeft = 70, kRight = 20, kTop = 34, kBottom = 48;  // plot margins, px
constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                    "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

// Maps data to pixels; x log2 or linear, y linear or log10.
struct Scale {
  double x0, x1, y0, y1;  // data range (on log axes, in log space)
  bool log_y;
  double w, h;
  bool log_x = true;
  double px(double x) const { return kLeft + ((log_x ? std::log2(x) : x) - x0) / (x1 - x0) * w; }
  double py(double y) const {
    const double v = log_y ? std::log10(std::max(y, 1e-12)) : y;
    return kTop + h - (v - y0) / (y1 - y0) * h;
  }
};

double niceStep(double span) {
  const double raw = span / 5;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

Scale makeScale(const ChartSpec& spec) {
  double xmin = std::numeric_limits<double>::max(), xmax = 0, ymin = xmin, ymax = 0;
  auto take = [&](double x, double y) {
    xmin = std::min(xmin, x), xmax = std::max(xmax, x);
    if (!spec.log_y || y > 0) ymin = std::min(ymin, y), ymax = std::max(ymax, y);
  };
  for (const ChartSeries& s : spec.series) {
    for (const ChartPoint& p : s.points) take(p.x, p.y);
    for (const ChartPoint& p : s.baseline) take(p.x, p.y);
    for (const ChartBand& b : s.bands)
      for (size_t i = 0; i < b.x.size(); ++i) take(b.x[i], b.hi[i]);
  }
  if (xmax == 0) xmin = 1, xmax = 2, ymin = 1, ymax = 2;
  Scale s{spec.log_x ? std::log2(xmin) : std::min(xmin, 0.0),
          spec.log_x ? std::log2(xmax) : xmax,
          0,
          0,
          spec.log_y,
          spec.width - kLeft - kRight,
          spec.height - kTop - kBottom,
          spec.log_x};
  if (spec.log_x && s.x1 - s.x0 < 1) s.x0 -= 0.5, s.x1 += 0.5;
  if (!spec.log_x) s.x1 = std::max(s.x1, s.x0 + 1);
  if (spec.log_y) {
    s.y0 = std::floor(std::log10(std::max(ymin, 1e-3)));
    s.y1 = std::max(std::ceil(std::log10(std::max(ymax, 1e-3))), s.y0 + 1);
  } else {
    const double step = niceStep(ymax > 0 ? ymax : 1);
    s.y1 = std::ceil(ymax * 1.02 / step) * step;
    if (s.y1 <= 0) s.y1 = 1;
  }
  return s;
}

std::string axes(const ChartSpec& spec, const Scale& s) {
  std::string out;
  const double bottom = kTop + s.h;
  auto xtick = [&](double v, const std::string& label) {
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2:.1f}\"/>"
        "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
        s.px(v), kTop, bottom, bottom + 16, label);
  };
  if (spec.log_x) {
    const int span = static_cast<int>(std::ceil(s.x1) - std::floor(s.x0));
    const int every = span > 24 ? 4 : span > 12 ? 2 : 1;
    for (int e = static_cast<int>(std::ceil(s.x0)); e <= static_cast<int>(std::floor(s.x1)); ++e)
      if (e % every == 0) xtick(std::exp2(e), shortBytes(std::exp2(e)));
  } else {
    const double step = niceStep(s.x1 - s.x0);
    for (double v = std::ceil(s.x0 / step) * step; v <= s.x1 + step * 1e-6; v += step)
      xtick(v, fmt::format("{:g}", v));
  }
  auto ytick = [&](double v, const std::string& label) {
    const double y = s.py(v);
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\"/>"
        "<text class=\"tick\" x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        kLeft, kLeft + s.w, y, kLeft - 6, y + 4, label);
  };
  if (s.log_y) {
    for (double e = s.y0; e <= s.y1 + 1e-9; ++e)
      ytick(std::pow(10, e), fmt::format("{:g}", std::pow(10, e)));
  } else {
    const double step = niceStep(s.y1);
    for (double v = 0; v <= s.y1 + step * 1e-6; v += step) ytick(v, fmt::format("{:g}", v));
  }
  out += fmt::format(
      "<text class=\"axis-label\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
      kLeft + s.w / 2, spec.height - 8, xmlEscape(spec.x_label));
  out += fmt::format(
      "<text class=\"axis-label\" transform=\"rotate(-90)\" x=\"{:.1f}\" y=\"16\" "
      "text-anchor=\"middle\">{}</text>\n",
      -(kTop + s.h / 2), xmlEscape(spec.y_label));
  out += fmt::format("<text class=\"chart-title\" x=\"{}\" y=\"20\">{}</text>\n", kLeft,
                     xmlEscape(spec.title));
  return out;
}

std::string pathData(const std::vector<ChartPoint>& pts, const Scale& s) {
  std::string d;
  for (size_t i = 0; i < pts.size(); ++i)
    d += fmt::format("{}{:.1f} {:.1f}", i ? " L" : "M", s.px(pts[i].x), s.py(pts[i].y));
  return d;
}

std::string band(const ChartBand& b, const Scale& s, const char* color) {
  if (b.x.empty()) return "";
  std::string d;
  for (size_t i = 0; i < b.x.size(); ++i)
    d += fmt::format("{}{:.1f} {:.1f}", i ? " L" : "M", s.px(b.x[i]), s.py(b.hi[i]));
  for (size_t i = b.x.size(); i-- > 0;)
    d += fmt::format(" L{:.1f} {:.1f}", s.px(b.x[i]), s.py(b.lo[i]));
  return fmt::format(
      "<path class=\"{}\" fill=\"{}\" stroke=\"none\" d=\"{} Z\"><title>{}</title></path>\n",
      b.css_class, color, d, xmlEscape(b.tip));
}

std::string markers(const std::vector<ChartPoint>& pts, const Scale& s, const char* cls) {
  std::string out;
  for (const ChartPoint& p : pts)
    out += fmt::format(
        "<circle class=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\"><title>{}</title></circle>\n",
        cls, s.px(p.x), s.py(p.y), xmlEscape(p.tip));
  return out;
}

std::string seriesGroup(const ChartSeries& series, size_t index, const Scale& s) {
  const char* color = seriesColor(index);
  const std::string name = xmlEscape(series.name);
  std::string out = fmt::format(
      "<g class=\"series\" data-series=\"{}\" data-index=\"{}\" "
      "stroke=\"{}\" fill=\"{}\">\n",
      name, index, color, color);
  for (const ChartBand& b : series.bands) out += band(b, s, color);
  if (!series.baseline.empty())
    out += fmt::format(
               "<path class=\"baseline-line\" fill=\"none\" stroke-dasharray=\"6 4\" "
               "data-series=\"{}\" data-points=\"{}\" d=\"{}\"/>\n",
               name, series.baseline.size(), pathData(series.baseline, s)) +
           markers(series.baseline, s, "pt baseline-pt");
  out += fmt::format(
      "<path class=\"series-line\" fill=\"none\" data-series=\"{}\" data-points=\"{}\" "
      "d=\"{}\"/>\n",
      name, series.points.size(), pathData(series.points, s));
  out += markers(series.points, s, "pt");
  return out + "</g>\n";
}

}  // namespace

const char* seriesColor(size_t index) { return kPalette[index % std::size(kPalette)]; }

std::string shortBytes(double bytes) {
  static const char* kUnits[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  return fmt::format("{:g}{}", bytes, kUnits[u]);
}

std::string renderChart(const ChartSpec& spec) {
  const Scale s = makeScale(spec);
  std::string out = fmt::format(
      "<figure class=\"chart\" id=\"{}\">\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">\n",
      spec.id, spec.width, spec.height, spec.width, spec.height);
  out += axes(spec, s);
  for (size_t i = 0; i < spec.series.size(); ++i) out += seriesGroup(spec.series[i], i, s);
  out += "</svg>\n<ul class=\"legend\">\n";
  for (size_t i = 0; i < spec.series.size(); ++i)
    out += fmt::format(
        "<li data-index=\"{}\"><span class=\"swatch\" style=\"background:{}\"></span>{}{}</li>\n",
        i, seriesColor(i), xmlEscape(spec.series[i].name),
        spec.series[i].baseline.empty() ? "" : " <span class=\"dash\">(dashed: baseline)</span>");
  return out + "</ul>\n</figure>\n";
}

}  // namespace ccscope::reports
