// Analyzer: the offline log analysis behind `ccscope analyze`. Feed it the lines of every input
// (or let analyzeInputs read files, directories, globs, stdin, gzip); it strips launcher
// prefixes, runs the rule set and the structured parsers, aggregates the findings with bounded
// memory, and finish() applies the cross-rank reasoning to produce a Diagnosis.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "diagnostics/analyze/block_parsers.h"
#include "diagnostics/analyze/crash_site.h"
#include "diagnostics/analyze/cue_tracker.h"
#include "diagnostics/analyze/device_tracker.h"
#include "diagnostics/analyze/finding_accumulator.h"
#include "diagnostics/analyze/hang_snapshot.h"
#include "diagnostics/analyze/hang_tracker.h"
#include "diagnostics/analyze/progress_tracker.h"
#include "diagnostics/analyze/rule_matcher.h"
#include "diagnostics/analyze/version_tracker.h"
#include "diagnostics/analyze/world_tracker.h"
#include "reports/diagnosis.h"

namespace ccscope::diagnostics {

// A rank NCCL RAS lists as missing from a communicator (derived from the report's sections).
const FindingSpec& rasRankMissingSpec();
const FindingSpec& rasRankDeadSpec();

class Analyzer {
 public:
  explicit Analyzer(std::vector<Rule> rules);
  // Default rules plus the operator's rule directories.
  static core::Result<std::unique_ptr<Analyzer>> create(const std::vector<std::string>& rule_dirs);

  // Reads one input ("-" is stdin); a read failure is a Status, a truncated stream a note.
  core::Status analyzeFile(const std::string& path);

  // Line-level interface (also what analyzeFile uses).
  void beginFile(const std::string& name);
  void feedLine(std::string_view raw, long line_number);
  void endFile();
  // What `ccscope hang` read on one node (its --json, or in memory): RAS's report, the kernel
  // log, Flight Recorder dumps and what each process was doing.
  void analyzeSnapshot(const HangSnapshot& s, const std::string& name);

  reports::Diagnosis finish();

  const RuleMatcher& matcher() const { return matcher_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct OpenPhase {
    const Rule* rule;
    Event event;
    Event base;
  };
  struct FileState {
    std::string name;
    int index = -1;
    int default_rank = -1;
    int last_seen_rank = -1;  // the rank last reported to the progress tracker
    std::string host;
    IbPortParser ib;
    P2pMatrixParser p2p;
    CrashSite crash;
    bool json_candidate = false;
    std::string ras_section;  // the NCCL RAS report section the lines are in
    bool ras_dead = false;    // the report holds a DEAD section
    std::string ras_op;       // the collective whose operation counts the rank lines give
    std::string json_text;
    std::map<std::string, OpenPhase> open_phases;  // phase -> the latest line that opened it
    std::set<std::string> closed;                  // phases a line of this file closed
  };
  reports::Evidence evidenceAt(std::string_view body, long line_number) const;
  void dispatchTriggers(const std::vector<int>& triggers, std::string_view body, long line_number,
                        const Event& base, std::vector<Event>& derived);
  void addRuleMatch(const RuleMatch& m, std::string_view body, const Event& base);
  void feedCues(std::string_view body, long line_number);
  void noteHost(const std::string& host);
  void concludePhases();
  void addEvent(Event e, const Event& base);
  const FindingSpec* specForLayer(const Rule& rule, std::string_view layer_name);
  void note(std::string text);
  // The RAS trigger kinds, in the order of their keywords (analyzer.cc's Trigger).
  enum class RasLine { kOperation, kManaged, kIncomplete, kMismatch, kDead, kCounts };
  void feedRasLine(int kind, std::string_view body, long line_number, std::vector<Event>& derived);
  void missingRasRank(std::string_view body, long line_number, std::vector<Event>& derived);
  void feedText(const std::string& name, const std::string& text, int rank,
                const std::string& host);
  bool readSnapshotFile(const std::string& path, core::Status& status);

  RuleMatcher matcher_;
  FindingAccumulator acc_;
  ProgressTracker progress_;
  VersionTracker versions_;
  WorldTracker worlds_;
  DeviceTracker devices_;
  RankClaimTracker claims_;
  NetPluginTracker plugins_;
  CueTracker cues_;
  HangTracker hang_;
  std::vector<int> cue_hits_;
  bool decisive_ = false;  // a root cause or symptom was found: no best guess needed
  std::unique_ptr<FileState> file_;
  // Phases still open where a file ended, and those some file ended with closed: that settles
  // them in every file (whose order against it is unknown), as when only rank 0 prints that
  // every process registered.
  std::map<std::string, std::vector<OpenPhase>> unfinished_;
  std::set<std::string> ended_closed_;
  std::set<std::string> closer_rank_seen_;  // phases whose closing rank opened them here
  std::set<std::string> hosts_;             // the first two hosts any line names
  std::map<std::string, std::unique_ptr<FindingSpec>> layered_specs_;
  std::vector<std::string> notes_;
  std::vector<RuleMatch> matches_;
  std::vector<int> triggers_;
  long files_ = 0;
  long lines_ = 0;
};

// Reads every input (already expanded by expandInputs) with the given extra rule directories.
struct AnalyzeResult {
  reports::Diagnosis diagnosis;
  std::vector<std::string> notes;  // inputs that ended early, skipped parts
};
core::Result<AnalyzeResult> analyzeInputs(const std::vector<std::string>& inputs,
                                          const std::vector<std::string>& rule_dirs);

}  // namespace ccscope::diagnostics
