#include "reports/junit_writer.h"

#include <fmt/format.h>

#include <cmath>
#include <regex>

#include "reports/text_escape.h"

namespace ccscope::reports {

namespace {

// Surefire-style seconds: at most three decimals.
std::string seconds(double s) { return fmt::format("{:.3f}", s < 0 ? 0.0 : s); }

double rowSeconds(const Measurement& m) { return m.time_us * std::max(m.iters, 1) / 1e6; }

// The schema wants a local ISO 8601 date-time without zone: "2025-01-31T12:00:00".
std::string timestampAttr(const RunRecords& run) {
  if (!run.meta) return "";
  static const std::regex kIso(R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})");
  std::smatch m;
  if (!std::regex_search(run.meta->start_time, m, kIso)) return "";
  return fmt::format(" timestamp=\"{}\"", m.str());
}

std::string hostnameAttr(const RunRecords& run) {
  if (!run.meta || run.meta->hosts.empty()) return "";
  return fmt::format(" hostname=\"{}\"", xmlEscape(run.meta->hosts.front()));
}

void writeCase(const ReportModel& model, const ReportRow& r, std::ostream& out) {
  const std::string cls = fmt::format("ccscope.{}.{}.{}.{}", model.runs[r.run].label,
                                      r.m.collective, r.m.transport, askedAlgorithm(r.m));
  out << fmt::format("    <testcase name=\"{}\" classname=\"{}\" time=\"{}\"",
                     xmlEscape(rowName(r.m)), xmlEscape(cls), seconds(rowSeconds(r.m)));
  if (!r.failed()) {
    out << "/>\n";
    return;
  }
  std::string type, message, body;
  for (const RowFailure& f : r.failures) {
    appendItem(type, ",", failureKindName(f.kind));
    appendItem(message, "; ", f.message);
    body += fmt::format("{}: {}\n", failureKindName(f.kind), f.message);
  }
  out << fmt::format(">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n",
                     xmlEscape(type), xmlEscape(message), xmlEscape(body));
}

void writeSuite(const ReportModel& model, size_t s, std::ostream& out) {
  const Series& series = model.series[s];
  size_t tests = 0, failures = 0;
  double time = 0;
  for (const ReportRow& r : model.rows) {
    if (r.series != s) continue;
    ++tests;
    failures += r.failed();
    time += rowSeconds(r.m);
  }
  const RunRecords& run = model.runs[series.run];
  out << fmt::format(
      "  <testsuite name=\"{}\" id=\"{}\" package=\"ccscope.{}\" tests=\"{}\" failures=\"{}\" "
      "errors=\"0\" skipped=\"0\" time=\"{}\"{}{}>\n",
      xmlEscape(series.collective + " " + series.name), s, xmlEscape(series.collective), tests,
      failures, seconds(time), timestampAttr(run), hostnameAttr(run));
  out << "    <properties>\n";
  out << fmt::format("      <property name=\"source\" value=\"{}\"/>\n", xmlEscape(run.source));
  out << fmt::format("      <property name=\"tolerance\" value=\"{}\"/>\n",
                     model.criteria.tolerance);
  if (run.meta)
    out << fmt::format("      <property name=\"ranks\" value=\"{}\"/>\n", run.meta->ranks);
  out << "    </properties>\n";
  for (const ReportRow& r : model.rows)
    if (r.series == s) writeCase(model, r, out);
  out << "  </testsuite>\n";
}

void writeLimitSuite(const ReportModel& model, size_t id, std::ostream& out) {
  out << fmt::format(
      "  <testsuite name=\"ccscope limits\" id=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
      "skipped=\"0\" time=\"0.000\">\n",
      id, model.unmatched_limits.size(), model.unmatched_limits.size());
  for (const std::string& l : model.unmatched_limits)
    out << fmt::format(
        "    <testcase name=\"{}\" classname=\"ccscope.limits\" time=\"0.000\">\n      <failure "
        "type=\"threshold\" message=\"{}\"/>\n    </testcase>\n",
        xmlEscape(l.substr(0, l.find(':'))), xmlEscape(l));
  out << "  </testsuite>\n";
}

// The testcases of a `ccscope pairs` run: one per host and one per link measured, each with
// the verdicts that name it (name, classname, failures).
struct PairCase {
  std::string name, classname;
  std::vector<const PairVerdict*> verdicts;
};

std::vector<PairCase> pairCases(const PairMatrix& p) {
  std::vector<PairCase> cases;
  for (const std::string& u : p.units) cases.push_back({u, "ccscope.pairs.host", {}});
  for (size_t a = 0; a < p.units.size(); ++a)
    for (size_t b = a + 1; b < p.units.size(); ++b)
      if (!std::isnan(p.bw_gbps[a][b]))
        cases.push_back({p.units[a] + " <-> " + p.units[b], "ccscope.pairs.link", {}});
  for (const PairVerdict& v : p.verdicts) {
    const std::string n = v.kind == "host" ? v.unit_a : v.unit_a + " <-> " + v.unit_b;
    for (PairCase& c : cases)
      if (c.name == n && c.classname == "ccscope.pairs." + v.kind) c.verdicts.push_back(&v);
  }
  return cases;
}

void writePairSuite(const RunRecords& run, size_t id, std::ostream& out) {
  const std::vector<PairCase> cases = pairCases(*run.pairs);
  size_t failures = 0;
  for (const PairCase& c : cases) failures += !c.verdicts.empty();
  out << fmt::format(
      "  <testsuite name=\"pairs {}\" id=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
      "skipped=\"0\" time=\"0.000\">\n",
      xmlEscape(run.label), id, cases.size(), failures);
  for (const PairCase& c : cases) {
    out << fmt::format("    <testcase name=\"{}\" classname=\"{}\" time=\"0.000\"",
                       xmlEscape(c.name), c.classname);
    if (c.verdicts.empty()) {
      out << "/>\n";
      continue;
    }
    out << ">\n";
    for (const PairVerdict* v : c.verdicts)
      out << fmt::format("      <failure type=\"{}\" message=\"{}\"/>\n", xmlEscape(v->verdict),
                         xmlEscape(v->text()));
    out << "    </testcase>\n";
  }
  out << "  </testsuite>\n";
}

}  // namespace

void writeJunit(const ReportModel& model, std::ostream& out) {
  double time = 0;
  for (const ReportRow& r : model.rows) time += rowSeconds(r.m);
  size_t tests = model.rows.size() + model.unmatched_limits.size();
  size_t failures = model.failedRows() + model.unmatched_limits.size();
  for (const RunRecords& run : model.runs)
    if (run.pairs)
      for (const PairCase& c : pairCases(*run.pairs)) {
        ++tests;
        failures += !c.verdicts.empty();
      }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << fmt::format(
      "<testsuites name=\"ccscope\" tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"{}\">\n",
      tests, failures, seconds(time));
  for (size_t s = 0; s < model.series.size(); ++s) writeSuite(model, s, out);
  if (!model.unmatched_limits.empty()) writeLimitSuite(model, model.series.size(), out);
  size_t id = model.series.size() + 1;
  for (const RunRecords& run : model.runs)
    if (run.pairs) writePairSuite(run, id++, out);
  out << "</testsuites>\n";
}

}  // namespace ccscope::reports
