#include "reports/markdown_writer.h"

#include <fmt/format.h>

#include <algorithm>

#include "reports/text_escape.h"

namespace ccscope::reports {

std::string verdictLine(const ReportModel& model) {
  if (model.passed()) return "passed";
  std::vector<std::string> parts;
  auto add = [&](size_t n, const char* what) {
    if (n) parts.push_back(fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"));
  };
  add(model.count(FailureKind::kRegression), "regressed row");
  add(model.count(FailureKind::kWrongResults), "row with wrong results");
  add(model.count(FailureKind::kThreshold), "row over a limit");
  add(model.unmatched_limits.size(), "limit that matched no row");
  add(model.pairVerdicts(), "host or link verdict");
  add(model.burninFailures(), "burn-in not passed");
  std::string out = "FAILED:";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : " ") + parts[i];
  return out;
}

namespace {

void writeRuns(const ReportModel& model, std::ostream& out) {
  out << "| run | collective | transport | algorithms | ranks | launcher | started | rows |\n"
         "|---|---|---|---|---:|---|---|---:|\n";
  for (const RunRecords& r : model.runs) {
    if (r.burnin) {  // a `ccscope burnin` run: its own section below
      out << fmt::format(
          "| {} | burnin ({}) | {} |  | {} |  |  | {} |\n", markdownCell(r.label),
          markdownCell(r.burnin->profile), markdownCell(r.burnin->transport), r.burnin->ranks,
          markdownCell(r.burnin->verdict.empty() ? "no summary" : r.burnin->verdict));
      continue;
    }
    if (r.pairs && !r.meta) {  // a `ccscope pairs` run: its own section below
      out << fmt::format("| {} | pairs (scope {}) | {} |  |  |  |  | {} pairs |\n",
                         markdownCell(r.label), markdownCell(r.pairs->scope),
                         markdownCell(r.pairs->transport), r.pairs->pairs);
      continue;
    }
    const RunMetadata m = r.meta.value_or(RunMetadata{});
    std::string algos;
    for (const auto& a : m.algorithms) appendItem(algos, ", ", a);
    out << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", markdownCell(r.label),
                       markdownCell(m.collective), markdownCell(m.transport), markdownCell(algos),
                       m.ranks, markdownCell(m.launcher), markdownCell(m.start_time),
                       r.rows.size());
  }
}

void writeKeyNumbers(const ReportModel& model, std::ostream& out) {
  if (model.series.empty()) return;
  out << "\n### Key numbers\n\n"
         "| collective | series | sizes | peak busbw (GB/s) | at size (B) | p50 latency, smallest "
         "size (us) |\n"
         "|---|---|---:|---:|---:|---:|\n";
  for (const Series& s : model.series) {
    if (s.points.empty()) continue;
    const ReportRow* peak = &model.rows[s.points.front()];
    for (size_t i : s.points)
      if (model.rows[i].m.busbw_gbps > peak->m.busbw_gbps) peak = &model.rows[i];
    const ReportRow& small = model.rows[s.points.front()];
    out << fmt::format("| {} | {} | {} | {:.3f} | {} | {:.2f} |\n", markdownCell(s.collective),
                       markdownCell(s.name), s.points.size(), peak->m.busbw_gbps, peak->m.bytes,
                       small.m.lat.p50);
  }
}

void writeRegressions(const ReportModel& model, std::ostream& out) {
  out << fmt::format("\n### Regressions ({})\n\n", model.count(FailureKind::kRegression));
  out << "| run | row | metric | baseline | now | change | slower by (us) | noise (us) |\n"
         "|---|---|---|---:|---:|---:|---:|---:|\n";
  size_t listed = 0;
  for (const ReportRow& r : model.rows) {
    if (!r.has(FailureKind::kRegression)) continue;
    for (const MetricDelta& d : r.baseline->deltas) {
      if (!d.regressed || listed++ >= kMarkdownMaxListed) continue;
      out << fmt::format(
          "| {} | {} | {} {} | {:.4g} | {:.4g} | {:.1f}% worse | {:.3g} | {:.3g} |\n",
          markdownCell(model.runs[r.run].label), markdownCell(rowName(r.m)), d.metric, d.unit,
          d.base, d.now, d.change * 100, d.excess_us, d.noise_us);
    }
  }
  if (listed > kMarkdownMaxListed)
    out << fmt::format("\n…and {} more (see the CSV or JUnit report).\n",
                       listed - kMarkdownMaxListed);
}

void writeOtherFailures(const ReportModel& model, FailureKind kind, const char* title,
                        std::ostream& out) {
  const size_t n = model.count(kind);
  if (n == 0) return;
  out << fmt::format("\n### {} ({})\n\n| run | row | why |\n|---|---|---|\n", title, n);
  size_t listed = 0;
  for (const ReportRow& r : model.rows)
    for (const RowFailure& f : r.failures)
      if (f.kind == kind && listed++ < kMarkdownMaxListed)
        out << fmt::format("| {} | {} | {} |\n", markdownCell(model.runs[r.run].label),
                           markdownCell(rowName(r.m)), markdownCell(f.message));
  if (listed > kMarkdownMaxListed)
    out << fmt::format("\n…and {} more.\n", listed - kMarkdownMaxListed);
}

void writeDiagnoses(const ReportModel& model, std::ostream& out) {
  for (const Diagnosis* d : model.diagnoses()) {
    out << fmt::format("\n### Diagnosis: {} layer{}\n\n> {}\n", core::layerName(d->layer),
                       d->conclusive ? "" : " (inconclusive)", markdownCell(d->verdict));
    if (!d->next_step.empty())
      out << fmt::format(">\n> **Next step:** {}\n", markdownCell(d->next_step));
  }
}

// Per `ccscope pairs` run: its verdicts, or that nothing was at fault.
void writePairs(const ReportModel& model, std::ostream& out) {
  for (const RunRecords& run : model.runs) {
    if (!run.pairs) continue;
    const PairMatrix& p = *run.pairs;
    out << fmt::format("\n### Pairs: {} ({} units, scope {}, {} pairs measured)\n\n",
                       markdownCell(run.label), p.units.size(), markdownCell(p.scope), p.pairs);
    if (p.verdicts.empty()) out << "No host or link at fault.\n";
    for (const PairVerdict& v : p.verdicts) out << "- " << markdownCell(v.text()) << "\n";
  }
}

// Per `ccscope burnin` run: its verdict, findings and congestion figures, or how far it got.
void writeBurnin(const ReportModel& model, std::ostream& out) {
  for (const RunRecords& run : model.runs) {
    if (!run.burnin) continue;
    const BurninRecords& b = *run.burnin;
    out << fmt::format("\n### Burn-in: {} (profile {}, {} ranks): {}\n\n", markdownCell(run.label),
                       markdownCell(b.profile), b.ranks,
                       b.verdict.empty() ? "no summary (the run ended early)" : b.verdict);
    if (b.verdict == "pass") out << "Every host and link passed.\n";
    for (const std::string& r : b.reasons) out << "- invalid: " << markdownCell(r) << "\n";
    for (const BurninFindingRecord& f : b.findings) out << "- " << markdownCell(f.text()) << "\n";
    size_t samples = 0;
    for (const SoakSeries& s : b.soak) samples += s.t_s.size();
    if (!b.soak.empty())
      out << fmt::format("\nSoak: {} series, {} samples.\n", b.soak.size(), samples);
    if (!b.congestion.empty())
      out << fmt::format("\nCongestion impact factor over {} repeats: p99 {}; bandwidth {}.\n",
                         b.congestion.size(), markdownCell(b.p99_spread),
                         markdownCell(b.bw_spread));
  }
}

}  // namespace

void writeMarkdown(const ReportModel& model, std::ostream& out) {
  out << fmt::format("## {} ccscope report: {}\n\n", model.passed() ? "✅" : "❌",
                     verdictLine(model));
  writeRuns(model, out);
  writeKeyNumbers(model, out);
  if (model.has_baseline) {
    size_t compared = model.rows.size() - model.unmatched_rows;
    out << fmt::format(
        "\nBaseline `{}`, tolerance {:g}%: {} rows compared, {} regressed, {} "
        "without a baseline row.\n",
        markdownCell(model.baseline_source), model.criteria.tolerance * 100, compared,
        model.count(FailureKind::kRegression), model.unmatched_rows);
    if (model.count(FailureKind::kRegression)) writeRegressions(model, out);
  }
  writeOtherFailures(model, FailureKind::kWrongResults, "Wrong results", out);
  writeOtherFailures(model, FailureKind::kThreshold, "Limits violated", out);
  if (!model.unmatched_limits.empty()) {
    out << "\n### Limits that checked nothing\n\n";
    for (const std::string& l : model.unmatched_limits) out << "- " << markdownCell(l) << "\n";
  }
  writeDiagnoses(model, out);
  writePairs(model, out);
  writeBurnin(model, out);
}

}  // namespace ccscope::reports
