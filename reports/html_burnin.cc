// The burn-in section of the HTML report: per `ccscope burnin` run its verdict, the findings,
// the hosts' verdicts, the preflight, the soak series as time charts (a series with a verdict
// shaded from the time it started) and the congestion repeats.
#include <fmt/format.h>

#include <algorithm>

#include "reports/html_sections.h"
#include "reports/svg_chart.h"
#include "reports/text_escape.h"

namespace ccscope::reports {

namespace {

// Per chart: the series with a verdict first, then the others up to this many.
constexpr size_t kMaxSeriesPerChart = 12;

std::string findingsList(const BurninRecords& b) {
  if (b.findings.empty() && b.reasons.empty())
    return b.verdict == "pass" ? "<p class=\"pass\">Every host and link passed.</p>\n" : "";
  std::string out = "<ul class=\"verdicts\">\n";
  for (const std::string& r : b.reasons) out += fmt::format("<li>invalid: {}</li>\n", xmlEscape(r));
  for (const BurninFindingRecord& f : b.findings)
    out += fmt::format("<li data-kind=\"{}\" data-verdict=\"{}\">{}</li>\n", xmlEscape(f.kind),
                       xmlEscape(f.verdict), xmlEscape(f.text()));
  return out + "</ul>\n";
}

std::string hostsTable(const BurninRecords& b) {
  if (b.hosts.empty()) return "";
  std::string out = "<table class=\"burnin-hosts\"><tr><th>host</th><th>verdict</th></tr>\n";
  for (const auto& [host, v] : b.hosts)
    out += fmt::format("<tr><td>{}</td><td class=\"{}\">{}</td></tr>\n", xmlEscape(host),
                       v == "pass" ? "pass" : "fail", xmlEscape(v));
  return out + "</table>\n";
}

std::string preflightTable(const BurninRecords& b) {
  if (b.preflight.empty()) return "";
  std::string out =
      "<h4>Preflight</h4>\n<table class=\"preflight\"><tr><th>outcome</th>"
      "<th>layer</th><th>probe</th><th>detail</th></tr>\n";
  for (const BurninPreflight& p : b.preflight)
    out +=
        fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", xmlEscape(p.outcome),
                    xmlEscape(p.layer), xmlEscape(p.probe), xmlEscape(p.detail));
  return out + "</table>\n";
}

ChartSeries chartSeries(const SoakSeries& s) {
  ChartSeries c;
  c.name = s.name() + (s.verdict.empty() || s.verdict == "pass" ? "" : " (" + s.verdict + ")");
  double top = 0, bottom = 0;
  for (size_t i = 0; i < s.t_s.size(); ++i) {
    if (!(s.value[i] > 0)) continue;
    c.points.push_back({s.t_s[i], s.value[i],
                        fmt::format("{} at {:.1f} s: {:.4g}", s.name(), s.t_s[i], s.value[i])});
    top = std::max(top, s.value[i]);
    bottom = bottom == 0 ? s.value[i] : std::min(bottom, s.value[i]);
  }
  const bool judged = !s.verdict.empty() && s.verdict != "pass";
  if (judged && s.since_s >= 0 && !c.points.empty()) {  // shaded from where it started
    ChartBand band{"band-p99",
                   {s.since_s, c.points.back().x},
                   {bottom, bottom},
                   {top, top},
                   fmt::format("{} since {:.1f} s: {}", s.name(), s.since_s, s.why)};
    c.bands.push_back(band);
  }
  return c;
}

std::string soakCharts(const BurninRecords& b, const std::string& id) {
  struct Kind {
    const char* kind;
    const char* metric;
    const char* title;
    const char* unit;
  };
  const Kind kinds[] = {{"link", "bandwidth", "Soak: link bandwidth", "GB/s one way"},
                        {"link", "p99", "Soak: link p99 latency", "us"},
                        {"collective", "busbw", "Soak: collectives", "busbw GB/s"}};
  std::string out;
  int n = 0;
  for (const Kind& k : kinds) {
    std::vector<const SoakSeries*> all;
    for (const SoakSeries& s : b.soak)
      if (s.kind == k.kind && s.metric == k.metric) all.push_back(&s);
    if (all.empty()) continue;
    auto judged = [](const SoakSeries* x) { return !x->verdict.empty() && x->verdict != "pass"; };
    std::stable_sort(all.begin(), all.end(), [&](const SoakSeries* x, const SoakSeries* y) {
      return judged(x) > judged(y);
    });
    ChartSpec spec;
    spec.id = fmt::format("{}-soak-{}", id, n++);
    spec.title = k.title;
    spec.x_label = "seconds into the soak";
    spec.y_label = k.unit;
    spec.log_y = true;
    spec.log_x = false;
    for (size_t i = 0; i < all.size() && i < kMaxSeriesPerChart; ++i)
      spec.series.push_back(chartSeries(*all[i]));
    out += renderChart(spec);
    if (all.size() > kMaxSeriesPerChart)
      out += fmt::format(
          "<p>{} of {} series shown (those with a verdict first); every sample "
          "is in the JSON Lines file.</p>\n",
          kMaxSeriesPerChart, all.size());
  }
  return out.empty() ? "" : "<h4>Soak</h4>\n<div class=\"charts\">\n" + out + "</div>\n";
}

std::string congestionTable(const BurninRecords& b) {
  if (b.congestion.empty())
    return b.congestion_note.empty()
               ? ""
               : fmt::format("<h4>Congestion</h4>\n<p>{}</p>\n", xmlEscape(b.congestion_note));
  std::string out = fmt::format(
      "<h4>Congestion</h4>\n<p>Impact factor (loaded / alone for p99, alone / loaded for "
      "bandwidth): p99 {}; bandwidth {}.</p>\n<table class=\"congestion\"><tr><th>repeat</th>"
      "<th>p99 alone, us</th><th>loaded</th><th>factor</th><th>GB/s alone</th><th>loaded</th>"
      "<th>factor</th></tr>\n",
      xmlEscape(b.p99_spread), xmlEscape(b.bw_spread));
  for (const CongestionRepeat& r : b.congestion)
    out += fmt::format(
        "<tr><td>{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.2f}</td><td>{:.3f}</td><td>{:.3f}"
        "</td><td>{:.2f}</td></tr>\n",
        r.repeat, r.alone_p99_us, r.loaded_p99_us, r.p99_factor, r.alone_gbps, r.loaded_gbps,
        r.bw_factor);
  return out + "</table>\n";
}

}  // namespace

std::string htmlBurninSection(const ReportModel& model) {
  std::string body;
  size_t index = 0;
  for (const RunRecords& run : model.runs) {
    if (!run.burnin) continue;
    const BurninRecords& b = *run.burnin;
    const std::string verdict = b.verdict.empty() ? "no summary: the run ended early" : b.verdict;
    body += fmt::format(
        "<div class=\"burnin-run\" data-verdict=\"{}\"><h3>{}: profile {}, {} ranks over {}: "
        "{}</h3>\n",
        xmlEscape(b.verdict.empty() ? "incomplete" : b.verdict), xmlEscape(run.label),
        xmlEscape(b.profile), b.ranks, xmlEscape(b.transport), xmlEscape(verdict));
    body += findingsList(b) + hostsTable(b) + preflightTable(b) +
            soakCharts(b, fmt::format("burnin{}", index++)) + congestionTable(b) + "</div>\n";
  }
  if (body.empty()) return "";
  return "<section id=\"burnin\" class=\"burnin\"><h2>Burn-in</h2>\n" + body + "</section>\n";
}

}  // namespace ccscope::reports
