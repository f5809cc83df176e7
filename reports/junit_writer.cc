#include "reports/junit_writer.h"

#include <fmt/format.h>

#include <cmath>
#include <regex>
#include <string>
#include <utility>
#include <vector>

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

// A testcase of a pairs or burn-in suite: a host, a link, a phase, with the verdicts that name
// it as failures (type, message).
struct VerdictCase {
  std::string name, classname;
  std::vector<std::pair<std::string, std::string>> failures;
};

// A `ccscope pairs` run: one per host and one per link measured.
std::vector<VerdictCase> pairCases(const PairMatrix& p) {
  std::vector<VerdictCase> cases;
  for (const std::string& u : p.units) cases.push_back({u, "ccscope.pairs.host", {}});
  for (size_t a = 0; a < p.units.size(); ++a)
    for (size_t b = a + 1; b < p.units.size(); ++b)
      if (!std::isnan(p.bw_gbps[a][b]))
        cases.push_back({p.units[a] + " <-> " + p.units[b], "ccscope.pairs.link", {}});
  for (const PairVerdict& v : p.verdicts) {
    const std::string n = v.kind == "host" ? v.unit_a : v.unit_a + " <-> " + v.unit_b;
    for (VerdictCase& c : cases)
      if (c.name == n && c.classname == "ccscope.pairs." + v.kind)
        c.failures.emplace_back(v.verdict, v.text());
  }
  return cases;
}

// A `ccscope burnin` run: the preflight, each host, each link and collective soaked or named,
// each fabric finding, and the summary itself when the run ended before it.
std::vector<VerdictCase> burninCases(const BurninRecords& b) {
  std::vector<VerdictCase> cases;
  auto at = [&](const std::string& name, const std::string& kind) -> VerdictCase& {
    const std::string cls = "ccscope.burnin." + kind;
    for (VerdictCase& c : cases)
      if (c.name == name && c.classname == cls) return c;
    cases.push_back({name, cls, {}});
    return cases.back();
  };
  VerdictCase& pre = at("preflight", "preflight");
  for (const std::string& r : b.reasons) pre.failures.emplace_back("invalid", r);
  for (const auto& [host, v] : b.hosts) at(host, "host");
  for (const SoakSeries& s : b.soak)
    at(s.kind == "link" ? s.unit_a + " <-> " + s.unit_b : s.unit_a, s.kind);
  for (const BurninFindingRecord& f : b.findings) {
    const std::string name = f.unit_b.empty() ? f.unit_a : f.unit_a + " <-> " + f.unit_b;
    at(name, f.kind).failures.emplace_back(f.verdict, f.text());
  }
  if (b.verdict.empty())
    at("summary", "summary")
        .failures.emplace_back("incomplete", "the run ended before its verdict");
  return cases;
}

void writeCaseSuite(const std::string& name, const std::vector<VerdictCase>& cases, size_t id,
                    std::ostream& out) {
  size_t failures = 0;
  for (const VerdictCase& c : cases) failures += !c.failures.empty();
  out << fmt::format(
      "  <testsuite name=\"{}\" id=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
      "skipped=\"0\" time=\"0.000\">\n",
      xmlEscape(name), id, cases.size(), failures);
  for (const VerdictCase& c : cases) {
    out << fmt::format("    <testcase name=\"{}\" classname=\"{}\" time=\"0.000\"",
                       xmlEscape(c.name), xmlEscape(c.classname));
    if (c.failures.empty()) {
      out << "/>\n";
      continue;
    }
    out << ">\n";
    for (const auto& [type, message] : c.failures)
      out << fmt::format("      <failure type=\"{}\" message=\"{}\"/>\n", xmlEscape(type),
                         xmlEscape(message));
    out << "    </testcase>\n";
  }
  out << "  </testsuite>\n";
}

// Every pairs and burn-in suite with its name, in run order.
std::vector<std::pair<std::string, std::vector<VerdictCase>>> verdictSuites(
    const ReportModel& model) {
  std::vector<std::pair<std::string, std::vector<VerdictCase>>> out;
  for (const RunRecords& run : model.runs) {
    if (run.pairs) out.emplace_back("pairs " + run.label, pairCases(*run.pairs));
    if (run.burnin) out.emplace_back("burnin " + run.label, burninCases(*run.burnin));
  }
  return out;
}

}  // namespace

void writeJunit(const ReportModel& model, std::ostream& out) {
  double time = 0;
  for (const ReportRow& r : model.rows) time += rowSeconds(r.m);
  size_t tests = model.rows.size() + model.unmatched_limits.size();
  size_t failures = model.failedRows() + model.unmatched_limits.size();
  const auto suites = verdictSuites(model);
  for (const auto& [name, cases] : suites)
    for (const VerdictCase& c : cases) {
      ++tests;
      failures += !c.failures.empty();
    }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << fmt::format(
      "<testsuites name=\"ccscope\" tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"{}\">\n",
      tests, failures, seconds(time));
  for (size_t s = 0; s < model.series.size(); ++s) writeSuite(model, s, out);
  if (!model.unmatched_limits.empty()) writeLimitSuite(model, model.series.size(), out);
  size_t id = model.series.size() + 1;
  for (const auto& [name, cases] : suites) writeCaseSuite(name, cases, id++, out);
  out << "</testsuites>\n";
}

}  // namespace ccscope::reports
