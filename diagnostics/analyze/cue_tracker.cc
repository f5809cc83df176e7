#include "diagnostics/analyze/cue_tracker.h"

#include <algorithm>
#include <cctype>

#include "diagnostics/analyze/keyword_index.h"

namespace ccscope::diagnostics {

namespace {

using L = core::Layer;

// Wrappers say that something failed, not what; the detail line under one says what.
constexpr std::string_view kDetailMarkers[] = {"Last error:", "last error:", "caused by",
                                               "Caused by",   "Reason:",     "reason:"};

bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether the text at [at, end) lies inside a path ("torch/csrc/distributed/c10d/X.cpp"): a
// source file's name says where code lives, not what failed.
bool insidePath(std::string_view line, size_t at, size_t end) {
  size_t b = at, e = end;
  while (b > 0 && line[b - 1] != ' ' && line[b - 1] != '(' && line[b - 1] != '"') --b;
  while (e < line.size() && line[e] != ' ' && line[e] != ')' && line[e] != '"') ++e;
  return line.substr(b, e - b).find('/') != std::string_view::npos;
}

// Whether the token around [at, end) is a setting ("X_ERROR_HANDLING=1", "... set by
// environment to"), not a message.
bool isSetting(std::string_view line, size_t end) {
  while (end < line.size() && line[end] != ' ' && line[end] != '=') ++end;
  return end < line.size() && (line[end] == '=' || line.substr(end).starts_with(" set ") ||
                               line.substr(end).starts_with(" = "));
}

bool isBoundary(const std::string_view line, size_t i, bool underscore) {
  return i >= line.size() || !isWordChar(line[i]) || (underscore && line[i] == '_');
}

// Whether `word` stands as a word somewhere in `line`: not inside another word, an 's' may
// follow, and a camel-case start counts ("ncclSystemError"). Severity words also stand between
// underscores ("ORTE_ERROR_LOG"), unless the token is a setting.
bool standsAlone(std::string_view line, std::string_view word, bool vocabulary = false) {
  for (size_t at = 0; at + word.size() <= line.size(); ++at) {
    bool same = true;
    for (size_t i = 0; i < word.size() && same; ++i)
      same = std::tolower(static_cast<unsigned char>(line[at + i])) == word[i];
    if (!same) continue;
    const bool start = at == 0 || isBoundary(line, at - 1, !vocabulary) ||
                       (std::isupper(static_cast<unsigned char>(line[at])) &&
                        std::islower(static_cast<unsigned char>(line[at - 1])));
    size_t end = at + word.size();
    if (end < line.size() && (line[end] == 's' || line[end] == 'S')) ++end;
    if (!start || !isBoundary(line, end, !vocabulary)) continue;
    if (vocabulary ? !insidePath(line, at, end) : !isSetting(line, end)) return true;
  }
  return false;
}

// "KeyError: ...", "torch.distributed.DistBackendError: ...": the message a traceback ends with.
bool isExceptionLine(std::string_view body) {
  const size_t colon = body.find(": ");
  if (colon == std::string_view::npos || colon > 80) return false;
  const std::string_view name = body.substr(0, colon);
  if (name.find(' ') != std::string_view::npos) return false;
  return name.ends_with("Error") || name.ends_with("Exception");
}

// `File "PATH", line N, in F`: a frame of the program's own code, not of an installed package
// or of Python itself.
bool isUserFrame(std::string_view body) {
  const size_t at = body.find("File \"");
  if (at == std::string_view::npos) return false;
  const size_t end = body.find('"', at + 6);
  if (end == std::string_view::npos || body.find(", line ", end) != end + 1) return false;
  const std::string_view path = body.substr(at + 6, end - at - 6);
  constexpr std::string_view kInstalled[] = {"site-packages", "dist-packages", "/lib/python",
                                             "<frozen",       "/torch/",       "/usr/lib/"};
  return std::none_of(std::begin(kInstalled), std::end(kInstalled),
                      [&](std::string_view p) { return path.find(p) != std::string_view::npos; });
}

bool isNativeCrash(std::string_view body) {
  constexpr std::string_view kSignals[] = {
      "Segmentation fault", "segmentation fault", "core dumped", "SIGSEGV", "SIGABRT", "SIGBUS"};
  return std::any_of(std::begin(kSignals), std::end(kSignals),
                     [&](std::string_view m) { return body.find(m) != std::string_view::npos; });
}

// A line its program printed at an informational level ("NCCL INFO", "[INFO]", "DEBUG"): a
// severity word there ("Could not find: libnccl-env.so") is not a failure, unless fatal.
bool isInfoLevel(std::string_view body) {
  auto word = [&](std::string_view w) {
    for (size_t at = body.find(w); at != std::string_view::npos; at = body.find(w, at + 1)) {
      const size_t end = at + w.size();
      if ((at == 0 || !std::isalnum(static_cast<unsigned char>(body[at - 1]))) &&
          (end >= body.size() || !std::isalnum(static_cast<unsigned char>(body[end]))))
        return true;
    }
    return false;
  };
  if (word("WARN") || word("WARNING") || word("ERROR") || word("FATAL")) return false;
  return word("INFO") || word("DEBUG") || word("TRACE");
}

bool isDetailLine(std::string_view body) {
  return std::any_of(std::begin(kDetailMarkers), std::end(kDetailMarkers),
                     [&](std::string_view m) { return body.find(m) != std::string_view::npos; });
}

// The vocabulary's own index: run only on the few lines that read as failures.
const KeywordIndex& vocabularyIndex() {
  static const KeywordIndex index = [] {
    KeywordIndex k;
    for (size_t i = 0; i < cueWords().size(); ++i)
      if (cueWords()[i].layer != L::kNone) k.add(cueWords()[i].text, static_cast<int>(i));
    k.build();
    return k;
  }();
  return index;
}

}  // namespace

const std::vector<int>& cueLineWords() {
  static const std::vector<int> words = [] {
    std::vector<int> w;
    for (size_t i = 0; i < cueWords().size(); ++i)
      if (cueWords()[i].layer == L::kNone) w.push_back(static_cast<int>(i));
    return w;
  }();
  return words;
}

void CueTracker::feed(std::span<const int> hits, std::string_view body, const std::string& file,
                      long line_number) {
  int severity = 0;
  for (int h : hits) {
    const CueWord& w = cueWords()[static_cast<size_t>(h)];
    if (w.layer != L::kNone) continue;
    if (w.weight < 0) {
      if (isUserFrame(body)) ++user_frames_;
      continue;
    }
    if (w.weight == 0 && !progressed_ && standsAlone(body, w.text)) progressed_ = true;
    if (w.weight > severity && standsAlone(body, w.text)) severity = w.weight;
  }
  if (severity == 0 || (severity < 3 && isInfoLevel(body))) return;
  if (severity == 3) native_crash_ = native_crash_ || isNativeCrash(body);
  // Cut and cleaned as every evidence line is: the JSON stays valid.
  const reports::Evidence where{file, line_number, reports::sanitizeText(body, kMaxCueEvidence)};
  if (failures_++ == 0) first_failure_ = where;
  // The first failure, the message a traceback ends with and the detail under a wrapper weigh
  // double: they are where a cause is written.
  int factor = 1;
  if (failures_ == 1 || isExceptionLine(body) || isDetailLine(body)) factor = 2;
  if (word_lines_.empty()) word_lines_.assign(cueWords().size(), 0);
  vocabulary_hits_.clear();
  vocabularyIndex().find(body, vocabulary_hits_);
  hits = vocabulary_hits_;
  std::array<int, kLayers> line{};
  std::array<const char*, kLayers> word{};
  for (int h : hits) {
    const CueWord& w = cueWords()[static_cast<size_t>(h)];
    const auto l = static_cast<size_t>(w.layer);
    if (w.layer == L::kNone || w.weight <= line[l]) continue;
    if (word_lines_[static_cast<size_t>(h)] >= kMaxLinesPerWord) continue;
    if (w.whole ? !standsAlone(body, w.text, true) : false) continue;
    line[l] = w.weight;
    word[l] = w.text;
  }
  for (size_t l = 1; l < kLayers; ++l) {
    if (!line[l]) continue;
    for (int h : hits)
      if (cueWords()[static_cast<size_t>(h)].text == word[l]) ++word_lines_[static_cast<size_t>(h)];
    const int s = line[l] * severity * factor;
    score_[l] += s;
    if (s > best_line_[l]) {
      best_line_[l] = s;
      evidence_[l] = where;
    }
    if (words_[l].find(word[l]) == std::string::npos && words_[l].size() < 80)
      words_[l] += (words_[l].empty() ? "" : ", ") + std::string(word[l]);
  }
}

CueTracker::Guess CueTracker::guess() const {
  Guess g;
  if (failures_ == 0) return g;
  size_t best = 0, second = 0;
  for (size_t l = 1; l < kLayers; ++l) {
    if (score_[l] > score_[best]) {
      second = best;
      best = l;
    } else if (score_[l] > score_[second]) {
      second = l;
    }
  }
  if (best == 0) {  // failures in words no layer owns: where it failed decides
    g.evidence = first_failure_;
    if (user_frames_ > 0) {
      g.layer = L::kApplication;
      g.site = Site::kUserTraceback;
    } else if (native_crash_) {
      g.layer = L::kLibrary;
      g.site = Site::kNativeCrash;
    } else {
      // Bootstrap has words of its own (rendezvous, store, MASTER_ADDR); a start that fails
      // without them is most often hosts that cannot reach each other.
      g.layer = progressed_ ? L::kApplication : L::kHostNetwork;
      g.site = progressed_ ? Site::kPastStart : Site::kAtStart;
    }
    return g;
  }
  g.layer = static_cast<core::Layer>(best);
  g.score = score_[best];
  g.runner_up = second ? static_cast<core::Layer>(second) : L::kNone;
  g.runner_up_score = score_[second];
  g.evidence = evidence_[best];
  g.words = words_[best];
  return g;
}

}  // namespace ccscope::diagnostics
