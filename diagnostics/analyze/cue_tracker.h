// The best guess when no signature matched: every line that reads as a failure (its severity
// words: "error", "failed", "refused", a fatal signal, a Python exception...) votes for the
// layers whose vocabulary it uses (sockets and routes, ibv_ and mlx5, CUDA and Xid, a missing
// symbol, a shape mismatch...), weighted by how severe the line is, whether it is the first
// failure or the message a traceback ends with, and whether it is a wrapper ("unhandled system
// error") or the detail under one ("Last error:"). A failure with no vocabulary at all falls
// back on where it sits: a Python traceback through the program's own files (application), a
// native crash (the library it ran in), the components its paths and identifiers name
// ("src/uct/ib/...", "/sys/class/infiniband", "ORTE_ERROR_LOG"), else the phase the logs
// reached: before any
// communicator or progress line, hosts that cannot reach each other (host-network: a
// rendezvous that failed says so in words of its own); after it, ranks out of step
// (application). Words inside a path or an identifier count only in that fallback. A failure
// written at an informational level ("NCCL INFO ... Connection refused, retrying") counts only
// when no other line reads as a failure.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "reports/diagnosis.h"

namespace ccscope::diagnostics {

struct CueWord {
  const char* text;   // matched case-insensitively
  core::Layer layer;  // kNone: a severity word
  int weight;         // vocabulary: how strongly it names its layer; severity: 1 warn .. 3 fatal
  bool whole = true;  // must stand as a word (an 's' may follow)
};

// The lexicon.
const std::vector<CueWord>& cueWords();
// The words the analyzer's own keyword index looks for on every line (severity, progress,
// frames: indices into cueWords()); the vocabulary is looked for only on failure lines.
const std::vector<int>& cueLineWords();

class CueTracker {
 public:
  // A line in which the keyword index found the line words `hits` (indices into cueWords()).
  // Progress words (weight 0: a communicator complete, an epoch, a loss) mark the job as past
  // its start.
  void feed(std::span<const int> hits, std::string_view body, const std::string& file,
            long line_number);

  // Where the failure sits when its words name no layer.
  enum class Site {
    kWords,
    kUserTraceback,
    kNativeCrash,
    kComponent,
    kInfoLevel,
    kAtStart,
    kPastStart
  };
  struct Guess {
    core::Layer layer = core::Layer::kNone;  // kNone: no line read as a failure
    int score = 0;
    int runner_up_score = 0;
    core::Layer runner_up = core::Layer::kNone;
    Site site = Site::kWords;
    reports::Evidence evidence;
    std::string words;  // the vocabulary that decided, for the verdict
  };
  Guess guess() const;

 private:
  static constexpr size_t kLayers = 7;
  static constexpr size_t kMaxCueEvidence = 512;
  static constexpr int kMaxLinesPerWord = 3;  // a message repeated by every rank counts thrice
  // Per layer: the failure lines' own words, words inside their paths and identifiers, and
  // the words of failures written at an informational level.
  struct Tally {
    std::array<int, kLayers> score{};
    std::array<int, kLayers> best_line{};
    std::array<reports::Evidence, kLayers> evidence{};
    std::array<std::string, kLayers> words{};
    void add(size_t layer, int s, const reports::Evidence& where, const char* word);
    size_t best() const;
  };
  void vote(std::string_view body, const reports::Evidence& where, int weight, bool info);
  Guess fromTally(const Tally& t, Site site) const;
  Tally words_tally_, component_tally_, info_tally_;
  std::vector<uint8_t> word_lines_;  // per cue word: lines it counted on
  std::vector<int> vocabulary_hits_;
  reports::Evidence first_failure_;
  long failures_ = 0;
  long user_frames_ = 0;
  bool native_crash_ = false;
  bool progressed_ = false;
};

}  // namespace ccscope::diagnostics
