#include "diagnostics/analyze/analyzer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "diagnostics/analyze/analyzer_triggers.h"
#include "diagnostics/analyze/flight_recorder.h"
#include "diagnostics/analyze/input_paths.h"
#include "diagnostics/analyze/line_prefix.h"
#include "diagnostics/analyze/line_reader.h"
#include "diagnostics/analyze/reasoner.h"
#include "diagnostics/analyze/rule_loader.h"

namespace ccscope::diagnostics {
namespace {

using namespace triggers;  // the Trigger names, short and used only in this file

constexpr size_t kMaxNotes = 100;
constexpr size_t kMaxCaptureBytes = 80;
constexpr size_t kMaxEvidenceBytes = 512;
constexpr size_t kMaxUnfinishedPerPhase = 64;

// Replaces "{N}" in a verdict template with capture group N.
std::string expandTemplate(const std::string& tmpl, const RuleMatch& m) {
  if (tmpl.find('{') == std::string::npos) return {};
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] == '{' && i + 2 < tmpl.size() && tmpl[i + 2] == '}' && tmpl[i + 1] >= '0' &&
        tmpl[i + 1] <= '9') {
      out +=
          reports::sanitizeText(m.groups[static_cast<size_t>(tmpl[i + 1] - '0')], kMaxCaptureBytes);
      i += 2;
    } else {
      out += tmpl[i];
    }
  }
  return out;
}

int toRank(std::string_view s) {
  int v = 0;
  size_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9' || n >= 7) break;
    v = v * 10 + (c - '0');
    ++n;
  }
  return n ? v : -1;
}

// The rank number right after `marker` anywhere in the line; -1 when there is none.
int rankAfter(std::string_view body, std::string_view marker) {
  const size_t at = body.find(marker);
  return at == std::string_view::npos ? -1 : toRank(body.substr(at + marker.size()));
}

// An errno text on a line whose caller a rule of its own names ("The client socket has failed
// to connect to ... (errno: 113 - No route to host)") is that caller's detail: the caller's rule
// decides, and the errno's generic reading would only compete with it.
void dropCallersErrno(std::vector<RuleMatch>& matches) {
  const bool caller = std::any_of(matches.begin(), matches.end(), [](const RuleMatch& m) {
    return !m.rule->errno_text && m.rule->spec.kind != reports::FindingKind::kContext;
  });
  if (!caller) return;
  std::erase_if(matches, [](const RuleMatch& m) { return m.rule->errno_text; });
}

// The triggers, then the cue words (CueTracker), in one keyword index.
std::vector<std::string> indexKeywords() {
  std::vector<std::string> k = triggerKeywords();
  for (int w : cueLineWords()) k.emplace_back(cueWords()[static_cast<size_t>(w)].text);
  return k;
}

}  // namespace

Analyzer::Analyzer(std::vector<Rule> rules) : matcher_(std::move(rules), indexKeywords()) {}

core::Result<std::unique_ptr<Analyzer>> Analyzer::create(
    const std::vector<std::string>& rule_dirs) {
  CCSCOPE_ASSIGN_OR_RETURN(auto rules, loadRules(rule_dirs));
  return std::make_unique<Analyzer>(std::move(rules));
}

void Analyzer::note(std::string text) {
  if (notes_.size() < kMaxNotes) notes_.push_back(std::move(text));
}

void Analyzer::beginFile(const std::string& name) {
  file_ = std::make_unique<FileState>();
  file_->name = name == "-" ? "<stdin>" : name;
  file_->index = static_cast<int>(files_++);
  file_->default_rank = rankFromFileName(name);
}

void Analyzer::endFile() {
  if (!file_) return;
  std::vector<Event> derived;
  file_->p2p.finish(derived);
  file_->crash.finish(derived);
  Event base;
  base.file_index = file_->index;
  base.rank = file_->default_rank;
  base.host = file_->host;
  base.order = static_cast<uint64_t>(file_->index) << 40;
  for (auto& e : derived) addEvent(std::move(e), base);
  for (const auto& phase : file_->closed) {
    if (!file_->open_phases.count(phase)) ended_closed_.insert(phase);
  }
  for (auto& [phase, open] : file_->open_phases) {
    auto& kept = unfinished_[phase];
    if (kept.size() < kMaxUnfinishedPerPhase) kept.push_back(std::move(open));
  }
  if (file_->json_candidate && !file_->json_text.empty()) {
    parseFlightRecorderDump(file_->json_text, file_->default_rank, file_->name, progress_);
  }
  file_.reset();
}

const FindingSpec* Analyzer::specForLayer(const Rule& rule, std::string_view layer_name) {
  auto layer = reports::parseLayer(std::string(layer_name.substr(0, 16)));
  if (!layer.isOk() || *layer == rule.spec.layer) return &rule.spec;
  const std::string key = rule.spec.id + "/" + core::layerName(*layer);
  auto& slot = layered_specs_[key];
  if (!slot) {
    slot = std::make_unique<FindingSpec>(rule.spec);
    slot->id = key;
    slot->layer = *layer;
  }
  return slot.get();
}

void Analyzer::addEvent(Event e, const Event& base) {
  decisive_ = decisive_ || decides(e.spec);
  e.file_index = base.file_index;
  if (e.order == 0) {  // events that carry their own line (a crash's signal line) keep it
    e.order = base.order;
    e.has_time = base.has_time;
    e.time = base.time;
  }
  if (e.rank < 0) e.rank = base.rank;
  if (e.host.empty()) e.host = base.host;
  for (auto& ev : e.evidence) {
    if (ev.file.empty()) ev.file = file_ ? file_->name : std::string();
    ev.text = reports::sanitizeText(ev.text, kMaxEvidenceBytes);
  }
  // Events concluded after the last file (phases, cross-rank) belong to their evidence's file.
  const std::string& file_name = file_                ? file_->name
                                 : e.evidence.empty() ? std::string()
                                                      : e.evidence.front().file;
  acc_.add(e, file_name);
}

void Analyzer::addRuleMatch(const RuleMatch& m, std::string_view body, const Event& base) {
  const Rule& rule = *m.rule;
  Event e;
  e.spec = rule.layer_group ? specForLayer(rule, m.groups[rule.layer_group]) : &rule.spec;
  e.verdict = expandTemplate(rule.spec.verdict, m);
  if (rule.peer_group) e.peer = reports::sanitizeText(m.groups[rule.peer_group], kMaxCaptureBytes);
  if (rule.rank_group) e.rank = toRank(m.groups[rule.rank_group]);
  if (!rule.other_rank_after.empty() && e.rank >= 0)
    e.other_rank = rankAfter(body, rule.other_rank_after);
  if (rule.host_group) {
    e.host = reports::sanitizeText(m.groups[rule.host_group], kMaxCaptureBytes);
    noteHost(e.host);
  }
  e.evidence = base.evidence;
  for (const auto& phase : rule.closes) {
    file_->open_phases.erase(phase);
    file_->closed.insert(phase);
  }
  if (!rule.opens.empty()) {
    if (rule.closed_by_rank >= 0 && (e.rank >= 0 ? e.rank : base.rank) == rule.closed_by_rank) {
      closer_rank_seen_.insert(rule.opens);
    }
    file_->open_phases.insert_or_assign(rule.opens, OpenPhase{&rule, std::move(e), base});
    return;
  }
  addEvent(std::move(e), base);
}

// NCCL cuts a hostname at its first dot, UCX and syslog do not: one machine, one name.
void Analyzer::noteHost(const std::string& host) {
  if (host.empty() || hosts_.size() >= 2) return;
  const bool name = std::isalpha(static_cast<unsigned char>(host.front())) != 0;
  hosts_.insert(name ? host.substr(0, host.find('.')) : host);
}

// A phase open where its file ended is where that process stopped, unless a file ended with it
// closed; one that only rank N closes counts only when rank N's logs are here; a one-host phase
// only when the logs name at most one host.
void Analyzer::concludePhases() {
  for (auto& [phase, opens] : unfinished_) {
    if (ended_closed_.count(phase)) continue;
    for (auto& open : opens) {
      const Rule& rule = *open.rule;
      if (rule.closed_by_rank >= 0 && !closer_rank_seen_.count(phase)) continue;
      if (rule.one_host && hosts_.size() > 1) continue;
      addEvent(std::move(open.event), open.base);
    }
  }
  unfinished_.clear();
}

reports::Evidence Analyzer::evidenceAt(std::string_view body, long line_number) const {
  return {file_->name, line_number, std::string(body.substr(0, kMaxEvidenceBytes))};
}

void Analyzer::dispatchTriggers(const std::vector<int>& triggers, std::string_view body,
                                long line_number, const Event& base, std::vector<Event>& derived) {
  bool p2p_fed = false;
  bool ib_fed = false;
  bool singleton_fed = false;
  bool launch_fed = false;
  for (int t : triggers) {
    if (t >= kFirstCrash) {
      file_->crash.start(body, line_number, base);
    } else if (t == kNranks || t == kWorldSize || t == kWorldSizeSpaced) {
      progress_.parseWorldSize(body);
      if (t == kNranks) devices_.parseLine(body, evidenceAt(body, line_number));
    } else if (t == kNcclVersion) {
      versions_.parseLine(body, base.host, evidenceAt(body, line_number));
    } else if ((t == kZeroOfOne || t == kZeroOutOfOne) && !singleton_fed) {
      worlds_.parseSingleton(body, evidenceAt(body, line_number));
      singleton_fed = true;
    } else if ((t == kMpirun || t == kMpiexec || t == kSrun) && !launch_fed) {
      worlds_.parseLaunch(body, evidenceAt(body, line_number));
      launch_fed = true;
    } else if (t == kNetPlugin || t == kPluginPath) {
      plugins_.parseLine(body, base.host, evidenceAt(body, line_number));
    } else if (t == kGlobalRank) {
      claims_.parseClaim(body, evidenceAt(body, line_number));
    } else if (t == kRegistered) {
      claims_.noteRegistered();
    } else if (t >= kRasOperation && t <= kRasCounts) {
      feedRasLine(t - kRasOperation, body, line_number, derived);
    } else if ((t == kSeqNum || t == kNcclWork)) {
      progress_.parseWatchdogLine(body, base.rank, evidenceAt(body, line_number));
    } else if ((t == kCaName || t == kState || t == kHcaId || t == kPort) && !ib_fed) {
      file_->ib.feed(body, line_number, derived);
      ib_fed = true;
    } else if ((t == kBandwidth || t == kAccessPeer) && !p2p_fed) {
      file_->p2p.feed(body, line_number, derived);
      p2p_fed = true;
    }
  }
  if (!p2p_fed && file_->p2p.active()) file_->p2p.feed(body, line_number, derived);
  if (file_->crash.active()) file_->crash.feed(body, line_number, derived);
}

// Hits past the triggers are cue words, for the best-guess stage.
void Analyzer::feedCues(std::string_view body, long line_number) {
  const auto cue_base = static_cast<int>(triggerKeywords().size());
  const auto first_cue = std::lower_bound(triggers_.begin(), triggers_.end(), cue_base);
  if (first_cue == triggers_.end()) return;
  cue_hits_.clear();
  for (auto it = first_cue; it != triggers_.end(); ++it)
    cue_hits_.push_back(cueLineWords()[static_cast<size_t>(*it - cue_base)]);
  triggers_.erase(first_cue, triggers_.end());
  // A root cause or a symptom found already decides; the guess is never asked for.
  if (!decisive_) cues_.feed(cue_hits_, body, file_->name, line_number);
}

void Analyzer::feedLine(std::string_view raw, long line_number) {
  if (!file_) beginFile("<input>");
  ++lines_;
  if (line_number == 1 && !raw.empty() && raw.find_first_not_of(" \t") != std::string_view::npos &&
      raw[raw.find_first_not_of(" \t")] == '{') {
    file_->json_candidate = true;
  }
  if (file_->json_candidate) {
    if (file_->json_text.size() + raw.size() + 1 > kMaxJsonDocumentBytes) {
      file_->json_candidate = false;
      std::string().swap(file_->json_text);
    } else {
      file_->json_text.append(raw).push_back('\n');
    }
  }
  const LineContext ctx = parseLinePrefix(raw);
  const int rank = ctx.rank >= 0 ? ctx.rank : file_->default_rank;
  if (rank != file_->last_seen_rank) {  // most lines repeat their file's rank
    progress_.noteRankSeen(rank);
    file_->last_seen_rank = rank;
  }
  // A line's host: its own header, else the host its rank was seen on, else (for files that
  // hold one process's output) the file's last NCCL header.
  std::string host(ctx.host.substr(0, kMaxCaptureBytes));
  if (!host.empty()) {
    file_->host = host;
    noteHost(host);
    acc_.learnHost(rank, host);
  } else if (ctx.rank >= 0) {
    host = acc_.hostOf(rank);
  } else {
    host = file_->host;
  }
  matches_.clear();
  triggers_.clear();
  matcher_.scan(ctx.body, matches_, triggers_);
  dropCallersErrno(matches_);
  feedCues(ctx.body, line_number);
  if (matches_.empty() && triggers_.empty() && !file_->p2p.active() && !file_->crash.active()) {
    return;
  }
  Event base;
  base.rank = rank;
  base.host = host;
  base.has_time = ctx.has_time;
  base.time = ctx.time;
  base.file_index = file_->index;
  base.order = (static_cast<uint64_t>(file_->index) << 40) | static_cast<uint64_t>(line_number);
  std::vector<Event> derived;
  dispatchTriggers(triggers_, ctx.body, line_number, base, derived);
  for (auto& e : derived) addEvent(std::move(e), base);
  if (matches_.empty()) return;
  base.evidence.push_back(
      {file_->name, line_number, std::string(ctx.body.substr(0, 4 * kMaxEvidenceBytes))});
  for (const auto& m : matches_) addRuleMatch(m, ctx.body, base);
}

core::Status Analyzer::analyzeFile(const std::string& path) {
  core::Status snapshot_status;
  if (readSnapshotFile(path, snapshot_status)) return snapshot_status;
  std::string pickle_note;  // a pickled Flight Recorder dump is binary: never read as lines
  if (readPickledFlightRecorder(path, rankFromFileName(path), progress_, pickle_note)) {
    ++files_;
    if (!pickle_note.empty()) note(pickle_note);
    return core::Status::ok();
  }
  CCSCOPE_ASSIGN_OR_RETURN(auto reader, LineReader::open(path));
  beginFile(path);
  std::string_view line;
  bool long_line_noted = false;
  while (reader->next(line)) {
    if (reader->truncatedLine() && !long_line_noted) {
      note(fmt::format("{}:{}: line longer than {} bytes, analysed its start only", file_->name,
                       reader->lineNumber(), kMaxLineBytes));
      long_line_noted = true;
    }
    feedLine(line, reader->lineNumber());
  }
  if (!reader->note().empty()) note(file_->name + ": " + reader->note());
  endFile();
  return core::Status::ok();
}

reports::Diagnosis Analyzer::finish() {
  if (file_) endFile();
  concludePhases();
  Event base;
  for (auto& e : progress_.conclude()) addEvent(std::move(e), base);
  for (auto& e : hang_.conclude(progress_)) addEvent(std::move(e), base);
  for (auto& e : versions_.conclude()) addEvent(std::move(e), base);
  for (auto& e : worlds_.conclude()) addEvent(std::move(e), base);
  for (auto& e : devices_.conclude()) addEvent(std::move(e), base);
  for (auto& e : claims_.conclude()) addEvent(std::move(e), base);
  for (auto& e : plugins_.conclude()) addEvent(std::move(e), base);
  return reason(acc_, files_, lines_, cues_.guess());
}

core::Result<AnalyzeResult> analyzeInputs(const std::vector<std::string>& inputs,
                                          const std::vector<std::string>& rule_dirs) {
  CCSCOPE_ASSIGN_OR_RETURN(auto analyzer, Analyzer::create(rule_dirs));
  for (const auto& path : inputs) CCSCOPE_RETURN_IF_ERROR(analyzer->analyzeFile(path));
  AnalyzeResult result;
  result.diagnosis = analyzer->finish();
  result.notes = analyzer->notes();
  return result;
}

}  // namespace ccscope::diagnostics
