#include "reports/burnin_records.h"

#include <fmt/format.h>

namespace ccscope::reports {

using core::Code;
using core::Status;
using nlohmann::json;

namespace {

Status need(const json& j, std::initializer_list<const char*> keys, bool numbers) {
  for (const char* k : keys) {
    const bool ok = j.contains(k) && (numbers ? j[k].is_number() : j[k].is_string());
    if (!ok)
      return Status(Code::kInvalidArgument,
                    fmt::format("{} record: field '{}' is missing or of the wrong type",
                                j.value("type", "?"), k));
  }
  return Status::ok();
}

double number(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string text(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it != j.end() && it->is_array())
    for (const json& s : *it)
      if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

std::string seriesKey(const std::string& kind, const std::string& a, const std::string& b,
                      const std::string& metric) {
  return kind + '\n' + a + '\n' + b + '\n' + metric;
}

BurninFindingRecord findingOf(const json& f) {
  return {text(f, "kind"),
          text(f, "unit_a"),
          text(f, "unit_b"),
          text(f, "verdict"),
          text(f, "phase"),
          text(f, "why"),
          f.contains("since_s") ? number(f, "since_s") : -1};
}

}  // namespace

bool isBurninRecord(const std::string& type) {
  return type == "burnin_run" || type == "preflight" || type == "soak_run" ||
         type == "soak_sample" || type == "soak_verdict" || type == "congestion" ||
         type == "congestion_summary" || type == "burnin_summary";
}

std::string SoakSeries::name() const {
  return unit_b.empty() ? fmt::format("{} {}", unit_a, metric)
                        : fmt::format("{} <-> {} {}", unit_a, unit_b, metric);
}

std::string BurninFindingRecord::text() const {
  std::string what = unit_b.empty() ? fmt::format("{} {}", kind, unit_a)
                                    : fmt::format("{} {} <-> {}", kind, unit_a, unit_b);
  std::string when = since_s >= 0 ? fmt::format(", from {:.1f} s", since_s) : "";
  return fmt::format("{} {} ({}{}): {}", verdict, what, phase, when, why);
}

SoakSeries& BurninRecords::series(const std::string& kind, const std::string& a,
                                  const std::string& b, const std::string& metric) {
  auto [it, fresh] = index_.emplace(seriesKey(kind, a, b, metric), soak.size());
  if (fresh) soak.push_back({kind, a, b, metric, {}, {}, "", -1, ""});
  return soak[it->second];
}

Status BurninRecords::addSample(const json& j) {
  CCSCOPE_RETURN_IF_ERROR(need(j, {"kind"}, false));
  CCSCOPE_RETURN_IF_ERROR(need(j, {"t_s"}, true));
  const double t = number(j, "t_s");
  if (text(j, "kind") == "link") {
    CCSCOPE_RETURN_IF_ERROR(need(j, {"unit_a", "unit_b"}, false));
    CCSCOPE_RETURN_IF_ERROR(need(j, {"bw_uni_gbps", "p99_us"}, true));
    for (const char* m : {"bandwidth", "p99"}) {
      SoakSeries& s = series("link", text(j, "unit_a"), text(j, "unit_b"), m);
      s.t_s.push_back(t);
      s.value.push_back(number(j, m == std::string("p99") ? "p99_us" : "bw_uni_gbps"));
    }
  } else {
    CCSCOPE_RETURN_IF_ERROR(need(j, {"collective"}, false));
    CCSCOPE_RETURN_IF_ERROR(need(j, {"busbw_gbps"}, true));
    SoakSeries& s = series("collective", text(j, "collective"), "", "busbw");
    s.t_s.push_back(t);
    s.value.push_back(number(j, "busbw_gbps"));
  }
  return Status::ok();
}

Status BurninRecords::addSummary(const json& j) {
  CCSCOPE_RETURN_IF_ERROR(need(j, {"verdict"}, false));
  verdict = text(j, "verdict");
  reasons = strings(j, "reasons");
  phases = strings(j, "phases");
  if (auto h = j.find("hosts"); h != j.end() && h->is_object())
    for (auto it = h->begin(); it != h->end(); ++it)
      hosts[it.key()] = it->is_string() ? it->get<std::string>() : "?";
  if (auto f = j.find("findings"); f != j.end() && f->is_array())
    for (const json& x : *f) findings.push_back(findingOf(x));
  return Status::ok();
}

Status BurninRecords::add(const json& j) {
  const std::string type = text(j, "type");
  if (type == "burnin_run") {
    profile = text(j, "profile");
    transport = text(j, "transport");
    ranks = static_cast<int>(number(j, "ranks"));
  } else if (type == "preflight") {
    CCSCOPE_RETURN_IF_ERROR(need(j, {"layer", "probe", "outcome"}, false));
    preflight.push_back(
        {text(j, "layer"), text(j, "probe"), text(j, "outcome"), text(j, "detail")});
  } else if (type == "soak_run") {
    soak_duration_s = number(j, "duration_s");
    soak_interval_s = number(j, "interval_s");
  } else if (type == "soak_sample") {
    return addSample(j);
  } else if (type == "soak_verdict") {
    CCSCOPE_RETURN_IF_ERROR(need(j, {"kind", "unit_a", "metric", "verdict"}, false));
    // A series sampled (the fabric's, the median link, is computed and has no samples here).
    auto it = index_.find(
        seriesKey(text(j, "kind"), text(j, "unit_a"), text(j, "unit_b"), text(j, "metric")));
    if (it != index_.end()) {
      SoakSeries& s = soak[it->second];
      s.verdict = text(j, "verdict");
      s.since_s = j.contains("since_s") ? number(j, "since_s") : -1;
      s.why = text(j, "why");
    }
  } else if (type == "congestion") {
    CCSCOPE_RETURN_IF_ERROR(need(j, {"repeat", "p99_factor", "bw_factor"}, true));
    const json alone = j.value("alone", json::object()), loaded = j.value("loaded", json::object());
    congestion.push_back({static_cast<int>(number(j, "repeat")), number(alone, "p99_us"),
                          number(loaded, "p99_us"), number(alone, "bw_uni_gbps"),
                          number(loaded, "bw_uni_gbps"), number(j, "p99_factor"),
                          number(j, "bw_factor")});
  } else if (type == "congestion_summary") {
    congestion_note = text(j, "note");
    p99_spread = text(j, "p99_spread");
    bw_spread = text(j, "bw_spread");
  } else if (type == "burnin_summary") {
    return addSummary(j);
  }
  return Status::ok();
}

}  // namespace ccscope::reports
