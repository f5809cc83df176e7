#include "diagnostics/analyze/progress_tracker.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace ccscope::diagnostics {
namespace {

constexpr size_t kMaxTrackedRanks = 1 << 17;
constexpr size_t kMaxTrackedOps = 1 << 16;
constexpr size_t kMaxListed = 16;

// The number after `key` in s, or -1.
long numberAfter(std::string_view s, std::string_view key) {
  const size_t at = s.find(key);
  if (at == std::string_view::npos) return -1;
  size_t i = at + key.size();
  while (i < s.size() && s[i] == ' ') ++i;
  long v = 0;
  size_t n = 0;
  while (i < s.size() && n < 12 && std::isdigit(static_cast<unsigned char>(s[i]))) {
    v = v * 10 + (s[i++] - '0');
    ++n;
  }
  return n ? v : -1;
}

std::string wordAfter(std::string_view s, std::string_view key) {
  const size_t at = s.find(key);
  if (at == std::string_view::npos) return {};
  size_t i = at + key.size();
  size_t j = i;
  while (j < s.size() && j - i < 32 &&
         (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_'))
    ++j;
  return std::string(s.substr(i, j - i));
}

// "... Rank 3]" as PyTorch writes it in its log prefixes.
int rankInBrackets(std::string_view s) {
  for (size_t at = s.find("Rank "); at != std::string_view::npos; at = s.find("Rank ", at + 1)) {
    long v = numberAfter(s.substr(at), "Rank ");
    size_t end = at + 5;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    if (v >= 0 && end < s.size() && s[end] == ']') return static_cast<int>(v);
  }
  return -1;
}

std::string listRanks(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size() && i < kMaxListed; ++i) {
    out += (i ? ", " : "") + std::to_string(ranks[i]);
  }
  if (ranks.size() > kMaxListed) out += fmt::format(" and {} more", ranks.size() - kMaxListed);
  return out;
}

}  // namespace

const FindingSpec& rankBehindSpec() {
  static const FindingSpec spec{
      "application.rank-behind",
      core::Layer::kApplication,
      reports::FindingKind::kRoot,
      45,
      "rank(s) behind the others never issued the collective the others wait in",
      "Look at what the rank(s) behind were doing instead (stack dump with py-spy dump, a "
      "rank-only code path such as `if rank == 0:` around a collective, data loading, a "
      "checkpoint); if they were stuck inside CUDA, check their GPU."};
  return spec;
}

const FindingSpec& opMismatchSpec() {
  static const FindingSpec spec{
      "application.collective-mismatch",
      core::Layer::kApplication,
      reports::FindingKind::kRoot,
      80,
      "ranks issued different collectives at the same sequence number",
      "Make every rank call the same collectives in the same order (look for rank-dependent "
      "branches, different metric keys, or uneven data); TORCH_DISTRIBUTED_DEBUG=DETAIL checks "
      "it at each call."};
  return spec;
}

const FindingSpec& rankAbsentSpec() {
  static const FindingSpec spec{
      "application.rank-absent",
      core::Layer::kApplication,
      reports::FindingKind::kRoot,
      30,
      "rank(s) of the job left no line in the logs while the others timed out waiting",
      "Find out what the silent rank(s) did: their own output (was it collected?), whether "
      "the process still ran (a stack dump with py-spy dump), and dmesg on their host."};
  return spec;
}

RankProgress* ProgressTracker::slot(int rank) {
  if (rank < 0) return nullptr;
  if (ranks_.size() >= kMaxTrackedRanks && !ranks_.count(rank)) return nullptr;
  return &ranks_[rank];
}

bool ProgressTracker::parseWatchdogLine(std::string_view body, int rank,
                                        const reports::Evidence& where) {
  const long seq = numberAfter(body, "SeqNum=");
  const long enq = numberAfter(body, "last enqueued NCCL work:");
  const long done = numberAfter(body, "last completed NCCL work:");
  if (seq < 0 && enq < 0 && done < 0) return false;
  if (rank < 0) rank = rankInBrackets(body);
  RankProgress* p = slot(rank);
  if (p == nullptr) return false;
  if (seq >= 0 && (body.find("timeout") != std::string_view::npos ||
                   body.find("timed out") != std::string_view::npos)) {
    if (p->timed_out_seq < 0 || seq < p->timed_out_seq) p->timed_out_seq = seq;
    p->op = wordAfter(body, "OpType=");
  }
  if (enq >= 0) p->last_enqueued = std::max(p->last_enqueued, enq);
  if (done >= 0) p->last_completed = std::max(p->last_completed, done);
  if (p->evidence.text.empty() || enq >= 0) p->evidence = where;
  return true;
}

std::string ProgressTracker::opAt(long seq) const {
  for (const auto& [key, by_op] : ops_)
    if (key.seq == seq && by_op.size() == 1) return by_op.begin()->first;
  return {};
}

int ProgressTracker::parseRasOperationLine(std::string_view body, const reports::Evidence& where,
                                           std::string* host, long* count_out) {
  const size_t at = body.find("Rank ");
  const bool none = body.find(" has not launched any operations") != std::string_view::npos;
  const size_t ops = none ? body.find(" has not launched") : body.find(" up to operation ");
  if (at == std::string_view::npos || ops == std::string_view::npos || ops < at) return -1;
  const long rank = numberAfter(body.substr(at), "Rank ");
  const long count = none ? 0 : numberAfter(body.substr(ops), " up to operation ");
  if (rank < 0 || count < 0 || rank > 1000000) return -1;
  const bool launched = none || body.find("launched up to") != std::string_view::npos;
  recordEnqueued(static_cast<int>(rank), launched ? count : -1, launched ? -1 : count, where);
  if (count_out) *count_out = count;
  if (host) {
    const size_t node = body.find(" on node ");
    host->clear();
    for (size_t i = node == std::string_view::npos ? body.size() : node + 9;
         i < body.size() && host->size() < 80; ++i) {
      const char c = body[i];
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != ':' && c != '-' &&
          c != '_')
        break;
      *host += c;
    }
  }
  return static_cast<int>(rank);
}

void ProgressTracker::recordEnqueued(int rank, long last_enqueued, long last_completed,
                                     const reports::Evidence& where) {
  RankProgress* p = slot(rank);
  if (p == nullptr) return;
  p->last_enqueued = std::max(p->last_enqueued, last_enqueued);
  p->last_completed = std::max(p->last_completed, last_completed);
  if (p->evidence.text.empty()) p->evidence = where;
}

void ProgressTracker::recordOp(int rank, const std::string& pg, long seq, const std::string& op,
                               const reports::Evidence& where) {
  if (rank < 0 || seq < 0 || op.empty()) return;
  OpKey key{pg, seq};
  if (ops_.size() >= kMaxTrackedOps && !ops_.count(key)) return;
  auto& ranks = ops_[key][op];
  if (ranks.size() < kMaxTrackedRanks) ranks.push_back(rank);
  op_evidence_.try_emplace(key, where);
}

// Ranks strictly below the maximum of `value` form the minority that is behind.
static std::vector<Event> behindBy(const std::map<int, RankProgress>& ranks,
                                   long RankProgress::*value, const char* what) {
  std::vector<std::pair<long, int>> seen;
  for (const auto& [rank, p] : ranks) {
    if (p.*value >= 0) seen.emplace_back(p.*value, rank);
  }
  if (seen.size() < 2) return {};
  const long lo = std::min_element(seen.begin(), seen.end())->first;
  const long hi = std::max_element(seen.begin(), seen.end())->first;
  if (lo == hi) return {};
  std::vector<int> behind;
  for (const auto& [v, rank] : seen) {
    if (v == lo) behind.push_back(rank);
  }
  if (behind.size() * 2 > seen.size()) return {};  // not a minority: no single laggard
  Event e;
  e.spec = &rankBehindSpec();
  e.verdict = fmt::format(
      "rank(s) {} {} collective #{} while the other {} rank(s) reached #{}: "
      "the rank(s) behind never issued the collective the others wait in",
      listRanks(behind), what, lo, seen.size() - behind.size(), hi);
  std::vector<Event> out;
  for (int r : behind) {
    Event one = e;
    one.rank = r;
    const auto& p = ranks.at(r);
    if (out.size() < 3 && !p.evidence.text.empty()) one.evidence.push_back(p.evidence);
    out.push_back(std::move(one));
  }
  return out;
}

std::optional<Event> ProgressTracker::opMismatch() const {
  for (const auto& [key, by_op] : ops_) {
    if (by_op.size() < 2) continue;
    std::string detail;
    for (const auto& [op, ranks] : by_op) {
      detail += fmt::format("{}{} on rank(s) {}", detail.empty() ? "" : "; ", op, listRanks(ranks));
    }
    Event e;
    e.spec = &opMismatchSpec();
    e.verdict = fmt::format("collective #{} of process group {} differs across ranks: {}", key.seq,
                            key.pg, detail);
    e.evidence.push_back(op_evidence_.at(key));
    return e;
  }
  return std::nullopt;
}

void ProgressTracker::parseWorldSize(std::string_view body) {
  long n = -1;
  for (std::string_view key : {"nranks ", "nRanks ", "world_size=", "world_size: ", "WORLD_SIZE=",
                               "WORLD_SIZE: ", "world size "}) {
    if (n < 0) n = numberAfter(body, key);
  }
  if (n > 1 && n <= static_cast<long>(kMaxTrackedRanks)) world_size_ = std::max(world_size_, n);
  // NCCL's init line names its rank: "comm 0x... rank 3 nranks 8 cudaDev 3 ...".
  if (const long r = numberAfter(body, " rank "); r >= 0 && r < n)
    noteRankSeen(static_cast<int>(r));
}

void ProgressTracker::noteRankSeen(int rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= kMaxTrackedRanks) return;
  if (seen_.size() <= static_cast<size_t>(rank)) seen_.resize(static_cast<size_t>(rank) + 1);
  seen_[static_cast<size_t>(rank)] = true;
}

// With the job's size known, at least two ranks timed out in a collective and only a few ranks
// said nothing at all: those few stopped first (or hung, or crashed without a word).
std::vector<Event> ProgressTracker::absentRanks() const {
  if (world_size_ < 2) return {};
  long timed_out = 0;
  const reports::Evidence* waiting = nullptr;  // a line of a rank that waited
  for (const auto& [rank, p] : ranks_) {
    if (p.timed_out_seq < 0 && p.last_enqueued < 0) continue;
    ++timed_out;
    if (!waiting && !p.evidence.text.empty()) waiting = &p.evidence;
  }
  std::vector<int> absent;
  for (long r = 0; r < world_size_; ++r) {
    const bool seen = (static_cast<size_t>(r) < seen_.size() && seen_[static_cast<size_t>(r)]) ||
                      ranks_.count(static_cast<int>(r));
    if (!seen) absent.push_back(static_cast<int>(r));
  }
  if (timed_out < 2 || absent.empty() || absent.size() * 4 > static_cast<size_t>(world_size_) + 3)
    return {};
  Event e;
  e.spec = &rankAbsentSpec();
  e.verdict = fmt::format(
      "rank(s) {} of {} left no line in the logs while {} rank(s) reported waiting in a "
      "collective: the silent rank(s) stopped, hung or crashed first (or their logs were not "
      "collected)",
      listRanks(absent), world_size_, timed_out);
  if (waiting) e.evidence.push_back(*waiting);
  std::vector<Event> out;
  for (int r : absent) {
    if (out.size() >= kMaxListed) break;
    out.push_back(e);
    out.back().rank = r;
  }
  return out;
}

std::vector<int> ProgressTracker::behind(long* lo_out, long* hi_out) const {
  std::vector<std::pair<long, int>> seen;
  for (const auto& [rank, p] : ranks_)
    if (p.last_enqueued >= 0) seen.emplace_back(p.last_enqueued, rank);
  if (seen.size() < 2) return {};
  const long lo = std::min_element(seen.begin(), seen.end())->first;
  const long hi = std::max_element(seen.begin(), seen.end())->first;
  if (lo_out) *lo_out = lo;
  if (hi_out) *hi_out = hi;
  std::vector<int> out;
  if (lo == hi) return out;
  for (const auto& [v, rank] : seen)
    if (v == lo) out.push_back(rank);
  if (out.size() * 2 > seen.size()) out.clear();
  return out;
}

std::vector<Event> ProgressTracker::conclude() const {
  std::vector<Event> out;
  if (auto e = opMismatch()) out.push_back(std::move(*e));
  for (auto& e : absentRanks()) out.push_back(std::move(e));
  auto behind = behindBy(ranks_, &RankProgress::last_enqueued, "last enqueued");
  if (behind.empty()) behind = behindBy(ranks_, &RankProgress::timed_out_seq, "timed out in");
  out.insert(out.end(), behind.begin(), behind.end());
  return out;
}

}  // namespace ccscope::diagnostics
