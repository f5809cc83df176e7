#include "diagnostics/analyze/text_report.h"

#include <fmt/format.h>

namespace ccscope::diagnostics {
namespace {

constexpr size_t kMaxOtherFindings = 10;

template <typename T>
std::string joined(const std::vector<T>& items, size_t max_items = 16) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max_items; ++i) {
    out += fmt::format("{}{}", i ? ", " : "", items[i]);
  }
  if (items.size() > max_items) out += fmt::format(" (+{} more)", items.size() - max_items);
  return out;
}

std::string evidenceLine(const reports::Evidence& e) {
  return e.line > 0 ? fmt::format("    {}:{}: {}\n", e.file, e.line, e.text)
                    : fmt::format("    {}: {}\n", e.file, e.text);
}

}  // namespace

std::string renderText(const reports::Diagnosis& d, const std::vector<std::string>& notes,
                       const std::string& title) {
  std::string out = fmt::format("{}: {} file(s), {} line(s)\n\n", title, d.files, d.lines);
  if (!d.conclusive) {
    out += fmt::format("No conclusive diagnosis.\n  {}\n", d.verdict);
  } else {
    out += fmt::format("Layer:      {}\n", core::layerName(d.layer));
    out += fmt::format("Verdict:    {}\n", d.verdict);
    out += fmt::format("Confidence: {}\n", d.confidence);
    if (!d.culprit.ranks.empty()) out += fmt::format("Ranks:      {}\n", joined(d.culprit.ranks));
    if (!d.culprit.hosts.empty()) out += fmt::format("Hosts:      {}\n", joined(d.culprit.hosts));
    if (!d.culprit.links.empty()) out += fmt::format("Links:      {}\n", joined(d.culprit.links));
    out += "Evidence:\n";
    for (const auto& e : d.evidence) out += evidenceLine(e);
    if (d.runner_up != core::Layer::kNone)
      out +=
          fmt::format("Runner-up:  [{}] {}\n", core::layerName(d.runner_up), d.runner_up_verdict);
  }
  out += fmt::format("Next step:  {}\n", d.next_step);
  if (d.findings.size() > (d.conclusive ? 1u : 0u)) {
    out += "\nOther findings (ranked):\n";
    size_t shown = 0;
    for (size_t i = d.conclusive ? 1 : 0; i < d.findings.size() && shown < kMaxOtherFindings; ++i) {
      const auto& f = d.findings[i];
      out += fmt::format("  {}. [{} {}] {} (x{})\n", ++shown, core::layerName(f.layer),
                         reports::findingKindName(f.kind), f.verdict, f.count);
      if (!f.evidence.empty()) out += "  " + evidenceLine(f.evidence.front());
    }
  }
  if (!notes.empty()) {
    out += "\nNotes:\n";
    for (const auto& n : notes) out += "  " + n + "\n";
  }
  return out;
}

}  // namespace ccscope::diagnostics
