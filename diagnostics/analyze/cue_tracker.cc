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

// Whether the lowercase `word` occurs at `at` in `line`, case aside.
bool matchesAt(std::string_view line, size_t at, std::string_view word) {
  for (size_t i = 0; i < word.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(line[at + i])) != word[i]) return false;
  return true;
}

template <size_t N>
bool containsAny(std::string_view body, const std::string_view (&markers)[N]) {
  return std::any_of(std::begin(markers), std::end(markers),
                     [&](std::string_view m) { return body.find(m) != std::string_view::npos; });
}

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
    if (!matchesAt(line, at, word)) continue;
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
  return containsAny(body, kSignals);
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

// An informational line that looked for something optional and did not find it ("NCCL INFO
// ... Could not find: libnccl-env.so"): a probe, not a failure.
bool isProbe(std::string_view body) {
  constexpr std::string_view kProbes[] = {"find", "not found", "No such file", "no such file"};
  return containsAny(body, kProbes);
}

// Whether `word` stands between non-alphanumeric characters somewhere in `line`: a segment of a
// path or an identifier ("src/uct/ib/rc", "/sys/class/infiniband", "ORTE_ERROR_LOG").
bool standsAsSegment(std::string_view line, std::string_view word) {
  auto alnum = [&](size_t i) { return std::isalnum(static_cast<unsigned char>(line[i])) != 0; };
  for (size_t at = 0; at + word.size() <= line.size(); ++at) {
    if (!matchesAt(line, at, word) || (at > 0 && alnum(at - 1))) continue;
    size_t end = at + word.size();
    if (end < line.size() && (line[end] == 's' || line[end] == 'S')) ++end;
    if (end >= line.size() || !alnum(end)) return true;
  }
  return false;
}

// A warning the program goes on after ("..., will proceed with local resources only",
// "falling back to sockets"): narration, not a failure.
bool goesOn(std::string_view body) {
  constexpr std::string_view kOn[] = {"will proceed", "proceeding with", "falling back",
                                      "fall back to", "continuing with", "will continue"};
  return containsAny(body, kOn);
}

bool isDetailLine(std::string_view body) { return containsAny(body, kDetailMarkers); }

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
  if (severity == 0) return;
  if (severity < 3 && goesOn(body)) return;
  const bool info = severity < 3 && isInfoLevel(body);
  if (info && isProbe(body)) return;
  // Cut and cleaned as every evidence line is: the JSON stays valid.
  const reports::Evidence where{file, line_number, reports::sanitizeText(body, kMaxCueEvidence)};
  if (info) {
    vote(body, where, severity, true);
    return;
  }
  if (severity == 3) native_crash_ = native_crash_ || isNativeCrash(body);
  if (failures_++ == 0) first_failure_ = where;
  // The first failure, the message a traceback ends with and the detail under a wrapper weigh
  // double: they are where a cause is written.
  int factor = 1;
  if (failures_ == 1 || isExceptionLine(body) || isDetailLine(body)) factor = 2;
  vote(body, where, severity * factor, false);
}

void CueTracker::vote(std::string_view body, const reports::Evidence& where, int weight,
                      bool info) {
  if (word_lines_.empty()) word_lines_.assign(cueWords().size(), 0);
  vocabulary_hits_.clear();
  vocabularyIndex().find(body, vocabulary_hits_);
  std::array<int, kLayers> plain{}, segment{};
  std::array<int, kLayers> plain_word{}, segment_word{};
  for (int h : vocabulary_hits_) {
    const CueWord& w = cueWords()[static_cast<size_t>(h)];
    const auto l = static_cast<size_t>(w.layer);
    if (w.layer == L::kNone || word_lines_[static_cast<size_t>(h)] >= kMaxLinesPerWord) continue;
    if (!w.whole || standsAlone(body, w.text, true)) {
      if (w.weight > plain[l]) plain[l] = w.weight, plain_word[l] = h;
    } else if (w.weight > segment[l] && standsAsSegment(body, w.text)) {
      segment[l] = w.weight, segment_word[l] = h;
    }
  }
  Tally& words = info ? info_tally_ : words_tally_;
  for (size_t l = 1; l < kLayers; ++l) {
    if (plain[l]) {
      ++word_lines_[static_cast<size_t>(plain_word[l])];
      words.add(l, plain[l] * weight, where, cueWords()[static_cast<size_t>(plain_word[l])].text);
    }
    if (segment[l] && !info)
      component_tally_.add(l, segment[l] * weight, where,
                           cueWords()[static_cast<size_t>(segment_word[l])].text);
  }
}

void CueTracker::Tally::add(size_t layer, int s, const reports::Evidence& where, const char* word) {
  score[layer] += s;
  if (s > best_line[layer]) {
    best_line[layer] = s;
    evidence[layer] = where;
  }
  if (words[layer].find(word) == std::string::npos && words[layer].size() < 80)
    words[layer] += (words[layer].empty() ? "" : ", ") + std::string(word);
}

size_t CueTracker::Tally::best() const {
  size_t best = 0;
  for (size_t l = 1; l < kLayers; ++l)
    if (score[l] > score[best]) best = l;
  return best;
}

CueTracker::Guess CueTracker::fromTally(const Tally& t, Site site) const {
  Guess g;
  const size_t best = t.best();
  size_t second = 0;
  for (size_t l = 1; l < kLayers; ++l)
    if (l != best && t.score[l] > t.score[second]) second = l;
  g.layer = static_cast<core::Layer>(best);
  g.score = t.score[best];
  g.runner_up = second ? static_cast<core::Layer>(second) : L::kNone;
  g.runner_up_score = t.score[second];
  g.evidence = t.evidence[best];
  g.words = t.words[best];
  g.site = site;
  return g;
}

CueTracker::Guess CueTracker::guess() const {
  Guess g;
  if (failures_ == 0) {
    if (info_tally_.best()) return fromTally(info_tally_, Site::kInfoLevel);
    return g;
  }
  if (words_tally_.best()) return fromTally(words_tally_, Site::kWords);
  // Failures in words no layer owns: where it failed decides.
  g.evidence = first_failure_;
  if (user_frames_ > 0) {
    g.layer = L::kApplication;
    g.site = Site::kUserTraceback;
  } else if (native_crash_) {
    g.layer = L::kLibrary;
    g.site = Site::kNativeCrash;
  } else if (component_tally_.best()) {
    return fromTally(component_tally_, Site::kComponent);
  } else {
    // Bootstrap has words of its own (rendezvous, store, MASTER_ADDR); a start that fails
    // without them is most often hosts that cannot reach each other.
    g.layer = progressed_ ? L::kApplication : L::kHostNetwork;
    g.site = progressed_ ? Site::kPastStart : Site::kAtStart;
  }
  return g;
}

}  // namespace ccscope::diagnostics
