// Diagnosis: the plain-data verdict of `ccscope analyze` (offline, from logs) and of
// `ccscope diagnose` (live probes). It names the failing layer (docs/architecture.md,
// "Diagnosis layers"), the culprit ranks/hosts/links, the evidence that supports it, the next
// step, and the other findings ranked.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace ccscope::reports {

// One piece of evidence: a log line (file:line, text) or a probe result (file empty, line 0).
struct Evidence {
  std::string file;
  long line = 0;
  std::string text;
};

struct Culprit {
  std::vector<int> ranks;
  std::vector<std::string> hosts;
  // "hostA <-> hostB" (linkName: a link either way), or a direction the logs showed
  // ("hostA -> hostB", "rank 3 -> rank 4").
  std::vector<std::string> links;
  bool empty() const { return ranks.empty() && hosts.empty() && links.empty(); }
  // Sorted, without repeats (evidence may name a rank or host many times).
  void dedupe();
};

// "a <-> b" with the two names in sorted order, so that every probe names a link the same way
// whichever end it saw it from, and Culprit::dedupe merges them.
std::string linkName(const std::string& a, const std::string& b);

// How a finding relates to the failure: a root-cause-class event, a symptom of some other
// failure (watchdog timeout, abort), or context (versions, interface choice).
enum class FindingKind { kRoot, kSymptom, kContext };

const char* findingKindName(FindingKind k);
core::Result<FindingKind> parseFindingKind(const std::string& name);
core::Result<core::Layer> parseLayer(const std::string& name);

struct Finding {
  std::string id;  // rule id or derived-finding id
  core::Layer layer = core::Layer::kNone;
  FindingKind kind = FindingKind::kContext;
  int score = 0;   // higher ranks first
  long count = 0;  // how many lines/events supported it
  std::string verdict;
  std::string next_step;
  Culprit culprit;
  std::vector<Evidence> evidence;
};

struct Diagnosis {
  core::Layer layer = core::Layer::kNone;
  bool conclusive = false;  // false: nothing conclusive, `verdict` says what was seen
  std::string confidence;   // "high", "medium", "low"
  std::string verdict;
  Culprit culprit;
  std::vector<Evidence> evidence;
  std::string next_step;
  std::vector<Finding> findings;  // ranked, best first (the top one included)
  // The best finding in another layer (kNone: none): what to look at when the verdict is wrong.
  core::Layer runner_up = core::Layer::kNone;
  std::string runner_up_verdict;
  long files = 0;
  long lines = 0;
};

nlohmann::json toJson(const Evidence& e);
nlohmann::json toJson(const Culprit& c);
nlohmann::json toJson(const Finding& f);
nlohmann::json toJson(const Diagnosis& d);

core::Result<Diagnosis> diagnosisFromJson(const nlohmann::json& j);

// Serialised JSON text; invalid UTF-8 in any string is replaced (U+FFFD), so output stays valid.
std::string toJsonText(const Diagnosis& d, int indent = 2);

// Replaces invalid UTF-8 sequences and control characters (except tab) so the text can be
// printed and serialised safely; truncates to at most max_bytes (on a character boundary).
std::string sanitizeText(std::string_view text, size_t max_bytes = 512);

}  // namespace ccscope::reports
