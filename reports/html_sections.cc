#include "reports/html_sections.h"

#include <fmt/format.h>

#include <set>

#include "reports/text_escape.h"

namespace ccscope::reports {

namespace {

constexpr size_t kMaxFailuresListed = 200;

std::string joined(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v) appendItem(out, sep, s);
  return out;
}

std::string uniqueHosts(const std::vector<std::string>& hosts) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& h : hosts)
    if (seen.insert(h).second) out.push_back(h);
  return joined(out);
}

std::string keyValues(const std::map<std::string, std::string>& m) {
  std::string out;
  for (const auto& [k, v] : m) out += xmlEscape(k) + "=" + xmlEscape(v) + "<br>";
  return out.empty() ? "—" : out;
}

std::string rowClass(const ReportRow& r) {
  std::string cls;
  if (r.has(FailureKind::kWrongResults)) cls += " fail-wrong";
  if (r.has(FailureKind::kThreshold)) cls += " fail-threshold";
  if (r.has(FailureKind::kRegression)) cls += " fail-regression";
  return cls.empty() ? "ok" : cls.substr(1);
}

std::string baselineCells(const ReportRow& r) {
  if (!r.baseline) return "<td>—</td><td>—</td><td>—</td>";
  std::string out;
  for (const MetricDelta& d : r.baseline->deltas) {
    const double better_sign = std::string(d.metric) == "busbw" ? -1 : 1;
    out += fmt::format(
        "<td class=\"{}\" title=\"baseline {:.4g} {}; noise {:.3g} us\">{:+.1f}%</td>",
        d.regressed ? "worse" : "", d.base, d.unit, d.noise_us, better_sign * d.change * 100 + 0.0);
  }
  return out;
}

}  // namespace

std::string htmlRunsSection(const ReportModel& model) {
  std::string out =
      "<section id=\"runs\"><h2>Runs</h2>\n<table class=\"meta\"><tr><th>run</th>"
      "<th>file</th><th>collective</th><th>transport</th><th>algorithms</th>"
      "<th>ranks</th><th>hosts</th><th>launcher</th><th>started (UTC)</th>"
      "<th>ccscope</th><th>rows</th></tr>\n";
  std::string details;
  for (const RunRecords& r : model.runs) {
    const RunMetadata m = r.meta.value_or(RunMetadata{});
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        xmlEscape(r.label), xmlEscape(r.source), xmlEscape(m.collective), xmlEscape(m.transport),
        xmlEscape(joined(m.algorithms)), m.ranks, xmlEscape(uniqueHosts(m.hosts)),
        xmlEscape(m.launcher), xmlEscape(m.start_time), xmlEscape(m.version), r.rows.size());
    details += fmt::format(
        "<details><summary>{}: command line, libraries, environment</summary>"
        "<p><code>{}</code></p><p>{}</p><p>{}</p></details>\n",
        xmlEscape(r.label), xmlEscape(joined(m.argv, " ")), keyValues(m.libraries),
        keyValues(m.env));
  }
  return out + "</table>\n" + details + "</section>\n";
}

std::string htmlFailuresSection(const ReportModel& model) {
  if (model.passed()) return "";
  std::string out = "<section id=\"failures\"><h2>Failures</h2>\n<ul class=\"failures\">\n";
  const std::vector<std::string> lines = model.failureLines();
  for (size_t i = 0; i < lines.size() && i < kMaxFailuresListed; ++i)
    out += "<li>" + xmlEscape(lines[i]) + "</li>\n";
  if (lines.size() > kMaxFailuresListed)
    out +=
        fmt::format("<li>…and {} more (see the table)</li>\n", lines.size() - kMaxFailuresListed);
  return out + "</ul></section>\n";
}

std::string htmlDiagnosisSection(const ReportModel& model) {
  const auto diagnoses = model.diagnoses();
  if (diagnoses.empty()) return "";
  std::string out = "<section id=\"diagnosis\"><h2>Diagnosis</h2>\n";
  for (const Diagnosis* d : diagnoses) {
    out += fmt::format(
        "<div class=\"diagnosis {}\"><p class=\"layer\">Layer: <b>{}</b>{}{}</p>"
        "<p class=\"verdict\">{}</p>\n",
        d->conclusive ? "conclusive" : "inconclusive", core::layerName(d->layer),
        d->conclusive ? "" : " (inconclusive)",
        d->confidence.empty() ? "" : ", confidence " + xmlEscape(d->confidence),
        xmlEscape(d->verdict));
    if (!d->culprit.empty()) {
      std::vector<std::string> ranks;
      for (int r : d->culprit.ranks) ranks.push_back(std::to_string(r));
      out +=
          fmt::format("<p>Culprit: ranks {} · hosts {} · links {}</p>\n", xmlEscape(joined(ranks)),
                      xmlEscape(joined(d->culprit.hosts)), xmlEscape(joined(d->culprit.links)));
    }
    if (!d->next_step.empty()) out += "<p><b>Next step:</b> " + xmlEscape(d->next_step) + "</p>\n";
    if (!d->evidence.empty()) {
      out += "<ul class=\"evidence\">\n";
      for (const Evidence& e : d->evidence)
        out += fmt::format("<li><code>{}{}</code> {}</li>\n", xmlEscape(e.file),
                           e.line ? fmt::format(":{}", e.line) : "", xmlEscape(e.text));
      out += "</ul>\n";
    }
    out += "</div>\n";
  }
  return out + "</section>\n";
}

std::string htmlTableSection(const ReportModel& model) {
  std::string out = fmt::format(
      "<section id=\"table\"><h2>All rows</h2>\n<table class=\"rows\"><thead><tr><th>run</th>"
      "<th>collective</th><th>algorithm</th><th>transport</th><th>size (B)</th><th>dtype</th>"
      "<th>op</th><th>placement</th><th>time (us)</th><th>algbw (GB/s)</th><th>busbw (GB/s)</th>"
      "<th>#wrong</th><th>p50 (us)</th><th>p99 (us)</th><th>max (us)</th>{}<th>verdict</th>"
      "</tr></thead><tbody>\n",
      model.has_baseline ? "<th>busbw vs base</th><th>p50 vs base</th><th>p99 vs base</th>" : "");
  for (const ReportRow& r : model.rows) {
    std::string why;
    for (const RowFailure& f : r.failures)
      why += std::string(failureKindName(f.kind)) + ": " + f.message + "\n";
    out += fmt::format(
        "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{:.2f}</td><td class=\"n\">{:.3f}</td>"
        "<td class=\"n\">{:.3f}</td><td class=\"n\">{}</td><td class=\"n\">{:.2f}</td>"
        "<td class=\"n\">{:.2f}</td><td class=\"n\">{:.2f}</td>{}<td title=\"{}\">{}</td></tr>\n",
        rowClass(r), xmlEscape(model.runs[r.run].label), xmlEscape(r.m.collective),
        xmlEscape(r.m.algorithm), xmlEscape(r.m.transport), r.m.bytes, xmlEscape(r.m.dtype),
        xmlEscape(r.m.redop), r.m.in_place ? "in-place" : "out-of-place", r.m.time_us,
        r.m.algbw_gbps, r.m.busbw_gbps, r.m.wrong < 0 ? "N/A" : std::to_string(r.m.wrong),
        r.m.lat.p50, r.m.lat.p99, r.m.lat.max, model.has_baseline ? baselineCells(r) : "",
        xmlEscape(why), r.failed() ? "FAIL" : "ok");
  }
  return out + "</tbody></table></section>\n";
}

}  // namespace ccscope::reports
