#include "reports/diagnosis.h"

#include <algorithm>
#include <array>

namespace ccscope::reports {
namespace {

using nlohmann::json;

constexpr std::array<core::Layer, 7> kLayers = {
    core::Layer::kNone, core::Layer::kBootstrap, core::Layer::kHostNetwork, core::Layer::kRdma,
    core::Layer::kGpu,  core::Layer::kLibrary,   core::Layer::kApplication};

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is invalid.
size_t utf8SequenceLength(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t len = 0;
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF)
    len = 2;
  else if (b >= 0xE0 && b <= 0xEF)
    len = 3;
  else if (b >= 0xF0 && b <= 0xF4)
    len = 4;
  else
    return 0;
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  const auto b1 = static_cast<unsigned char>(s[i + 1]);
  if (b == 0xE0 && b1 < 0xA0) return 0;   // overlong
  if (b == 0xED && b1 >= 0xA0) return 0;  // surrogates
  if (b == 0xF0 && b1 < 0x90) return 0;   // overlong
  if (b == 0xF4 && b1 >= 0x90) return 0;  // above U+10FFFF
  return len;
}

std::vector<std::string> stringList(const json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key) || !j[key].is_array()) return out;
  for (const auto& v : j[key]) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::string stringField(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

Culprit culpritFromJson(const json& j) {
  Culprit c;
  if (!j.is_object()) return c;
  if (j.contains("ranks") && j["ranks"].is_array()) {
    for (const auto& r : j["ranks"]) {
      if (r.is_number_integer()) c.ranks.push_back(r.get<int>());
    }
  }
  c.hosts = stringList(j, "hosts");
  c.links = stringList(j, "links");
  return c;
}

std::vector<Evidence> evidenceFromJson(const json& j) {
  std::vector<Evidence> out;
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    if (!e.is_object()) continue;
    Evidence ev{stringField(e, "file"), 0, stringField(e, "text")};
    if (e.contains("line") && e["line"].is_number_integer()) ev.line = e["line"].get<long>();
    out.push_back(std::move(ev));
  }
  return out;
}

}  // namespace

const char* findingKindName(FindingKind k) {
  switch (k) {
    case FindingKind::kRoot:
      return "root";
    case FindingKind::kSymptom:
      return "symptom";
    case FindingKind::kContext:
      return "context";
  }
  return "?";
}

core::Result<FindingKind> parseFindingKind(const std::string& name) {
  for (auto k : {FindingKind::kRoot, FindingKind::kSymptom, FindingKind::kContext}) {
    if (name == findingKindName(k)) return k;
  }
  return core::Status(core::Code::kInvalidArgument,
                      "unknown finding kind '" + name + "' (root, symptom, context)");
}

core::Result<core::Layer> parseLayer(const std::string& name) {
  for (auto l : kLayers) {
    if (name == core::layerName(l)) return l;
  }
  return core::Status(
      core::Code::kInvalidArgument,
      "unknown layer '" + name + "' (bootstrap, host-network, rdma, gpu, library, application)");
}

nlohmann::json toJson(const Evidence& e) {
  return json{{"file", e.file}, {"line", e.line}, {"text", e.text}};
}

std::string linkName(const std::string& a, const std::string& b) {
  return a < b ? a + " <-> " + b : b + " <-> " + a;
}

void Culprit::dedupe() {
  auto uniq = [](auto& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  uniq(ranks);
  uniq(hosts);
  uniq(links);
}

nlohmann::json toJson(const Culprit& c) {
  return json{{"ranks", c.ranks}, {"hosts", c.hosts}, {"links", c.links}};
}

nlohmann::json toJson(const Finding& f) {
  json ev = json::array();
  for (const auto& e : f.evidence) ev.push_back(toJson(e));
  return json{{"id", f.id},
              {"layer", core::layerName(f.layer)},
              {"kind", findingKindName(f.kind)},
              {"score", f.score},
              {"count", f.count},
              {"verdict", f.verdict},
              {"culprit", toJson(f.culprit)},
              {"evidence", ev},
              {"next_step", f.next_step}};
}

nlohmann::json toJson(const Diagnosis& d) {
  json ev = json::array();
  for (const auto& e : d.evidence) ev.push_back(toJson(e));
  json findings = json::array();
  for (const auto& f : d.findings) findings.push_back(toJson(f));
  json j{{"layer", core::layerName(d.layer)},
         {"conclusive", d.conclusive},
         {"confidence", d.confidence},
         {"verdict", d.verdict},
         {"culprit", toJson(d.culprit)},
         {"evidence", ev},
         {"next_step", d.next_step},
         {"findings", findings},
         {"inputs", json{{"files", d.files}, {"lines", d.lines}}}};
  if (d.runner_up != core::Layer::kNone)
    j["runner_up"] =
        json{{"layer", core::layerName(d.runner_up)}, {"verdict", d.runner_up_verdict}};
  return j;
}

core::Result<Diagnosis> diagnosisFromJson(const nlohmann::json& j) {
  if (!j.is_object()) {
    return core::Status(core::Code::kInvalidArgument, "diagnosis JSON is not an object");
  }
  Diagnosis d;
  auto layer = parseLayer(stringField(j, "layer"));
  if (!layer.isOk()) return layer.takeStatus();
  d.layer = *layer;
  d.conclusive =
      j.contains("conclusive") && j["conclusive"].is_boolean() && j["conclusive"].get<bool>();
  d.confidence = stringField(j, "confidence");
  d.verdict = stringField(j, "verdict");
  d.next_step = stringField(j, "next_step");
  if (j.contains("culprit")) d.culprit = culpritFromJson(j["culprit"]);
  if (j.contains("evidence")) d.evidence = evidenceFromJson(j["evidence"]);
  if (j.contains("runner_up") && j["runner_up"].is_object()) {
    auto ru = parseLayer(stringField(j["runner_up"], "layer"));
    d.runner_up = ru.isOk() ? *ru : core::Layer::kNone;
    d.runner_up_verdict = stringField(j["runner_up"], "verdict");
  }
  if (j.contains("findings") && j["findings"].is_array()) {
    for (const auto& fj : j["findings"]) {
      if (!fj.is_object()) continue;
      Finding f;
      f.id = stringField(fj, "id");
      auto fl = parseLayer(stringField(fj, "layer"));
      f.layer = fl.isOk() ? *fl : core::Layer::kNone;
      auto fk = parseFindingKind(stringField(fj, "kind"));
      f.kind = fk.isOk() ? *fk : FindingKind::kContext;
      if (fj.contains("score") && fj["score"].is_number_integer()) f.score = fj["score"].get<int>();
      if (fj.contains("count") && fj["count"].is_number_integer())
        f.count = fj["count"].get<long>();
      f.verdict = stringField(fj, "verdict");
      f.next_step = stringField(fj, "next_step");
      if (fj.contains("culprit")) f.culprit = culpritFromJson(fj["culprit"]);
      if (fj.contains("evidence")) f.evidence = evidenceFromJson(fj["evidence"]);
      d.findings.push_back(std::move(f));
    }
  }
  return d;
}

std::string toJsonText(const Diagnosis& d, int indent) {
  return toJson(d).dump(indent, ' ', false, json::error_handler_t::replace);
}

std::string sanitizeText(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 4);
  size_t i = 0;
  while (i < text.size()) {
    const size_t len = utf8SequenceLength(text, i);
    const std::string_view piece = len ? text.substr(i, len) : std::string_view("\xEF\xBF\xBD");
    if (out.size() + piece.size() > max_bytes) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (len == 1 && (c < 0x20 || c == 0x7F)) {
      out += c == '\t' ? '\t' : '?';
    } else {
      out += piece;
    }
    i += len ? len : 1;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace ccscope::reports
