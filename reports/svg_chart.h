// Line charts as inline SVG, generated here so the HTML report needs no library and no network:
// log2 x axis (message size) or a linear one (time), linear or log10 y axis, one <path
// class="series-line"> per series with one point per size, optional dashed baseline path and shaded
// bands (p50..p99, p99..max). Every point carries an SVG <title>, which browsers show on hover.
// Attributes data-series and data-points let tests (tests/browser) check the chart from the DOM.
#pragma once

#include <string>
#include <vector>

namespace ccscope::reports {

struct ChartPoint {
  double x = 0, y = 0;  // x > 0; y > 0 on a log axis
  std::string tip;      // hover text
};

struct ChartBand {        // filled area between lo and hi at the given x, e.g. p50..p99
  std::string css_class;  // "band-p99", "band-max"
  std::vector<double> x, lo, hi;
  std::string tip;
};

struct ChartSeries {
  std::string name;
  std::vector<ChartPoint> points;
  std::vector<ChartPoint> baseline;  // drawn dashed in the same colour; empty: none
  std::vector<ChartBand> bands;
};

struct ChartSpec {
  std::string id;  // unique element id
  std::string title, x_label, y_label;
  bool log_y = false;
  int width = 780, height = 360;
  std::vector<ChartSeries> series;
  bool log_x = true;  // log2 x with size ticks; false: linear x with plain ticks (time)
};

// The <figure> with the SVG and its legend (legend entries toggle series, see html_writer.cc).
std::string renderChart(const ChartSpec& spec);

// Axis labels for sizes: 8, 512, 4K, 16M, 1G.
std::string shortBytes(double bytes);
// Series colour by index (a palette of ten that stays readable when printed).
const char* seriesColor(size_t index);

}  // namespace ccscope::reports
