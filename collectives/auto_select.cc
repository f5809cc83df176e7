#include "collectives/auto_select.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ccscope::collectives {

using core::Status;

namespace {

// Where each candidate is measured: latency-bound, both sides of the shm transport's 64 KiB
// switch from slot copies to single copies, and bandwidth-bound, up to 16 MiB while the time
// budget allows (beyond the largest anchor measured, its ratio holds).
constexpr double kAnchorBytes[] = {8, 256, 4096, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20};
// Round 0 only warms up: the first runs of a schedule at a size are slower than the ones after
// (docs/performance.md, "Measuring on small shared machines"); the later three's median counts.
constexpr int kRounds = 4;
constexpr double kBatchSeconds = 2e-3;  // small sizes: enough back-to-back runs to fill this
constexpr int kMaxIters = 200, kMaxWarmIters = 20;
// The next anchor is measured only while the runs it would take fit in this (by the previous
// anchor's times), and only for candidates within this factor of the best at the previous one.
// Pruning saves the budget for the larger anchors, but it is a guess: beyond the caches an
// algorithm 3x slower at 1 MiB can be the fastest at 16 MiB (allreduce np 2: the tree against
// recursive doubling), so a pruned candidate's prediction counts as extrapolated there.
constexpr double kBudgetSeconds = 1.0;
constexpr double kPruneFactor = 3.0;
constexpr double kPruneFromBytes = 1 << 20;  // below, latency decides: a slow start says nothing
// closeCandidates(): within this factor of the model's pick, at most this many, in this time.
// timeClose(): a warm-up round and five timed rounds of batches filling 10 ms. Two close
// algorithms differ by less than the anchors' spread, so the decision needs more runs than an
// anchor's, or the pick changes from one process to the next.
constexpr double kCloseFactor = 1.5;
constexpr double kExtrapolatedCloseFactor = 4.0;
constexpr double kExtrapolatedBeyond = 2.0;  // Corrections::extrapolated()
constexpr size_t kMaxClose = 4;
constexpr double kCloseBudgetSeconds = 0.5;
constexpr int kCloseRounds = 6;
// timeClose() takes fewer timed rounds, down to this many, when the warm-up round's runs show
// that five would overrun the budget: the model's times beyond its last anchor can be 2-3x
// short. The warm-up round itself is not capped: a schedule's first run may grow its scratch
// buffer, a cost its rows would pay too if it were picked.
constexpr int kMinCloseTimedRounds = 3;
constexpr double kCloseBatchSeconds = 10e-3;

// The middle value (the upper one of an even count); v is not empty.
double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Back-to-back runs of `per_op` seconds that fill a batch of `seconds`.
int batch(double per_op, int most, double seconds = kBatchSeconds) {
  return static_cast<int>(std::clamp(seconds / std::max(per_op, 1e-9), 1.0, double(most)));
}

// measureCandidates() from one anchor to the next. Every decision (iterations, pruning, budget)
// is taken from times already reduced over ranks, so all ranks take the same one and run the
// same collectives.
class AnchorMeasurer {
 public:
  AnchorMeasurer(std::vector<const AlgorithmInfo*> algos, int ranks, size_t elem,
                 const CostParams& cost, const TimeAlgorithm& time,
                 const std::function<Status(std::span<double>)>& max_over_ranks)
      : algos_(std::move(algos)),
        na_(algos_.size()),
        ranks_(ranks),
        elem_(elem),
        cost_(cost),
        time_(time),
        max_over_ranks_(max_over_ranks),
        last_(na_, 0.0) {
    out_.ratio.reserve(na_);
    for (const AlgorithmInfo* a : algos_) out_.ratio.emplace_back(a->name, std::vector<double>{});
    out_.measured_to.assign(na_, 0.0);
  }

  // Times every candidate still in the running at `count` elements; false, with nothing run,
  // when the runs would overrun the budget.
  core::Result<bool> measure(uint64_t count) {
    const double bytes = static_cast<double>(count * elem_);
    AnchorPlan plan = planAnchor(bytes);
    if (!out_.bytes.empty() && spent_ + plan.estimate > kBudgetSeconds) return false;
    CCSCOPE_ASSIGN_OR_RETURN(std::vector<double> t, timeRounds(count, plan.iters));
    record(count, bytes, plan.iters, t);
    prev_bytes_ = bytes;
    return true;
  }

  Corrections take() { return std::move(out_); }

 private:
  struct AnchorPlan {
    std::vector<int> iters;  // per candidate, warm-up runs; 0: pruned
    double estimate = 0;     // seconds all the anchor's runs would take
  };

  // At the first anchor the model predicts each run; after it, the previous anchor's time.
  AnchorPlan planAnchor(double bytes) const {
    const bool first = out_.bytes.empty();
    AnchorPlan plan{std::vector<int>(na_, 0)};
    for (size_t ai = 0; ai < na_; ++ai) {
      if (!first && last_[ai] == 0) continue;
      double per_op =
          first ? algos_[ai]->cost(ranks_, bytes, cost_) : last_[ai] * bytes / prev_bytes_;
      plan.iters[ai] = batch(per_op, kMaxWarmIters);
      plan.estimate += kRounds * (batch(per_op, kMaxIters) + 1) * per_op;
    }
    return plan;
  }

  // t[round * na + algo]. Round 0 warms each candidate up, and its time (the slowest rank's)
  // sets how many runs fill a batch; rounds 1-3 then take turns, forwards and backwards, so a
  // slow spell of the machine is shared among the candidates instead of falling on one.
  core::Result<std::vector<double>> timeRounds(uint64_t count, std::vector<int>& iters) {
    for (size_t ai = 0; ai < na_; ++ai) {
      if (iters[ai] == 0) continue;
      CCSCOPE_ASSIGN_OR_RETURN(double warm, time_(*algos_[ai], count, iters[ai]));
      CCSCOPE_RETURN_IF_ERROR(max_over_ranks_(std::span<double>(&warm, 1)));
      spent_ += (iters[ai] + 1) * warm;
      iters[ai] = batch(warm, kMaxIters);
    }
    std::vector<double> t(kRounds * na_, 0.0);
    for (int round = 1; round < kRounds; ++round)
      for (size_t k = 0; k < na_; ++k) {
        const size_t ai = round % 2 ? k : na_ - 1 - k;
        if (iters[ai] == 0) continue;
        CCSCOPE_ASSIGN_OR_RETURN(t[round * na_ + ai], time_(*algos_[ai], count, iters[ai]));
      }
    CCSCOPE_RETURN_IF_ERROR(max_over_ranks_(t));  // a collective takes as long as its slowest rank
    return t;
  }

  // The anchor's medians into the corrections and the table, then the pruning for the next one.
  void record(uint64_t count, double bytes, const std::vector<int>& iters,
              const std::vector<double>& t) {
    out_.bytes.push_back(bytes);
    out_.table += fmt::format("{}{} B:", out_.table.empty() ? "" : "\n", count * elem_);
    double best = 0;
    std::vector<double> growth;  // ratio here over ratio at the previous anchor, per candidate
    for (size_t ai = 0; ai < na_; ++ai) {
      std::vector<double>& ratio = out_.ratio[ai].second;
      if (iters[ai] == 0) {
        out_.table += fmt::format(" {} -", algos_[ai]->name);
        continue;
      }
      std::vector<double> mine;
      for (int round = 1; round < kRounds; ++round) mine.push_back(t[round * na_ + ai]);
      last_[ai] = std::max(median(mine), 1e-9);
      out_.measured_to[ai] = bytes;
      for (int round = 1; round < kRounds; ++round) spent_ += (iters[ai] + 1) * t[round * na_ + ai];
      double model = algos_[ai]->cost(ranks_, bytes, cost_);
      ratio.push_back(model > 0 ? last_[ai] / model : 1.0);
      if (ratio.size() > 1) growth.push_back(ratio.back() / ratio[ratio.size() - 2]);
      out_.table += fmt::format(" {} {:.1f}", algos_[ai]->name, last_[ai] * 1e6);
      best = best == 0 ? last_[ai] : std::min(best, last_[ai]);
    }
    // A pruned candidate keeps its distance: its ratio moves as the measured ones' did (the
    // median), so a machine slowing down per byte beyond the caches slows it down too.
    const double g = growth.empty() ? 1.0 : median(growth);
    for (size_t ai = 0; ai < na_; ++ai)
      if (iters[ai] == 0) out_.ratio[ai].second.push_back(out_.ratio[ai].second.back() * g);
    for (size_t ai = 0; ai < na_; ++ai)
      if (iters[ai] != 0 && bytes >= kPruneFromBytes && last_[ai] > kPruneFactor * best)
        last_[ai] = 0;
  }

  const std::vector<const AlgorithmInfo*> algos_;
  const size_t na_;
  const int ranks_;
  const size_t elem_;
  const CostParams& cost_;
  const TimeAlgorithm& time_;
  const std::function<Status(std::span<double>)>& max_over_ranks_;
  std::vector<double> last_;  // seconds per operation at the previous anchor; 0: pruned
  double spent_ = 0, prev_bytes_ = 0;
  Corrections out_;
};

}  // namespace

double Corrections::at(std::string_view algorithm, double b) const {
  auto it = std::find_if(ratio.begin(), ratio.end(), [&](auto& r) { return r.first == algorithm; });
  if (it == ratio.end() || bytes.empty()) return 1.0;
  const std::vector<double>& r = it->second;
  if (b <= bytes.front()) return r.front();
  if (b >= bytes.back()) return r.back();
  // bytes[i - 1] < b < bytes[i]
  size_t i = std::upper_bound(bytes.begin(), bytes.end(), b) - bytes.begin();
  double x = (std::log(b) - std::log(bytes[i - 1])) / (std::log(bytes[i]) - std::log(bytes[i - 1]));
  return std::exp(std::log(r[i - 1]) + x * (std::log(r[i]) - std::log(r[i - 1])));
}

bool Corrections::extrapolated(std::string_view algorithm, double b) const {
  for (size_t i = 0; i < ratio.size() && i < measured_to.size(); ++i)
    if (ratio[i].first == algorithm) return b > kExtrapolatedBeyond * measured_to[i];
  return false;  // not measured at all: the formula alone, as everywhere without anchors
}

void Corrections::learn(double b, const std::vector<std::pair<std::string, double>>& timed,
                        const std::function<double(std::string_view)>& model) {
  auto known = [&](const auto& t) {
    return std::any_of(ratio.begin(), ratio.end(), [&](auto& r) { return r.first == t.first; });
  };
  if (!(b > 0) || std::none_of(timed.begin(), timed.end(), known)) return;
  size_t i = std::lower_bound(bytes.begin(), bytes.end(), b) - bytes.begin();
  if (i == bytes.size() || bytes[i] != b) {  // a new anchor: the others' curves pass through it
    std::vector<double> here;
    for (const auto& [name, r] : ratio) here.push_back(at(name, b));
    bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(i), b);
    for (size_t k = 0; k < ratio.size(); ++k)
      ratio[k].second.insert(ratio[k].second.begin() + static_cast<std::ptrdiff_t>(i), here[k]);
  }
  for (const auto& [name, seconds] : timed)
    for (size_t k = 0; k < ratio.size(); ++k) {
      if (ratio[k].first != name) continue;
      if (const double m = model(name); m > 0 && seconds > 0) ratio[k].second[i] = seconds / m;
      if (k < measured_to.size()) measured_to[k] = std::max(measured_to[k], b);
    }
}

std::vector<uint64_t> anchorCounts(Collective c, int ranks, size_t elem, size_t max_bytes) {
  std::vector<uint64_t> out;
  for (double b : kAnchorBytes) {
    if (b > static_cast<double>(max_bytes)) break;
    uint64_t count = std::max<uint64_t>(1, static_cast<uint64_t>(b) / elem);
    count = std::max<uint64_t>(roundCount(c, count, ranks), roundCount(c, ranks, ranks));
    if (count * elem > max_bytes) break;
    if (out.empty() || count > out.back()) out.push_back(count);
  }
  return out;
}

core::Result<Corrections> measureCandidates(
    Collective c, int ranks, size_t elem, size_t max_bytes, const CostParams& cost,
    const TimeAlgorithm& time, const std::function<Status(std::span<double>)>& max_over_ranks) {
  int64_t start = core::nowNs();
  const Collective measured = c == Collective::kAlltoallv ? Collective::kAlltoall : c;
  std::vector<const AlgorithmInfo*> algos;
  for (const AlgorithmInfo& a : allAlgorithms())
    if (a.collective == measured) algos.push_back(&a);
  std::vector<uint64_t> counts = anchorCounts(measured, ranks, elem, max_bytes);
  if (ranks < 2 || algos.size() < 2 || counts.empty()) return Corrections{};
  AnchorMeasurer anchors(std::move(algos), ranks, elem, cost, time, max_over_ranks);
  for (uint64_t count : counts) {
    CCSCOPE_ASSIGN_OR_RETURN(bool within_budget, anchors.measure(count));
    if (!within_budget) break;
  }
  Corrections out = anchors.take();
  out.seconds = (core::nowNs() - start) / 1e9;
  return out;
}

Choice choose(Collective c, int ranks, double bytes, const CostParams& cost, const Corrections* m) {
  Choice ch;
  for (const AlgorithmInfo& a : allAlgorithms())
    if (a.collective == c) {
      ch.predicted_s.emplace_back(a.name,
                                  a.cost(ranks, bytes, cost) * (m ? m->at(a.name, bytes) : 1.0));
      if (m && m->extrapolated(a.name, bytes)) ch.extrapolated.push_back(a.name);
    }
  std::stable_sort(ch.predicted_s.begin(), ch.predicted_s.end(),
                   [](auto& x, auto& y) { return x.second < y.second; });
  if (!ch.predicted_s.empty()) ch.algo = findAlgorithm(c, ch.predicted_s.front().first);
  return ch;
}

std::string Choice::explain() const {
  std::string out;
  for (const auto& [name, s] : predicted_s)
    out += fmt::format("{}{} {:.1f} us", out.empty() ? "" : " < ", name, s * 1e6);
  for (size_t i = 0; i < timed_s.size(); ++i)
    out += fmt::format(
        "{}{} {:.1f} us",
        i == 0 ? fmt::format("; timed at this size in {:.2f} s: ", timing_seconds) : " < ",
        timed_s[i].first, timed_s[i].second * 1e6);
  return out;
}

std::vector<size_t> closeCandidates(const Choice& ch) {
  std::vector<size_t> out;
  if (ch.predicted_s.size() < 2) return out;
  const double cheapest = ch.predicted_s.front().second;
  double cost = 0;
  for (size_t k = 0; k < ch.predicted_s.size() && out.size() < kMaxClose; ++k) {
    const auto& [name, s] = ch.predicted_s[k];
    const bool guess =
        std::find(ch.extrapolated.begin(), ch.extrapolated.end(), name) != ch.extrapolated.end();
    if (s > (guess ? kExtrapolatedCloseFactor : kCloseFactor) * cheapest) continue;
    const double mine = kCloseRounds * (batch(s, kMaxIters, kCloseBatchSeconds) + 1) * s;
    if (cost + mine > kCloseBudgetSeconds) break;  // dearer ones after it would not fit either
    out.push_back(k);
    cost += mine;
  }
  if (out.size() < 2) out.clear();
  return out;
}

Status timeClose(Choice& ch, Collective c, const std::vector<size_t>& which, const TimeAtSize& time,
                 const std::function<Status(std::span<double>)>& max_over_ranks) {
  const size_t n = which.size();
  if (n < 2) return Status::ok();
  const int64_t start = core::nowNs();
  std::vector<const AlgorithmInfo*> algos;
  std::vector<double> predicted;
  for (size_t k : which) {
    if (k >= ch.predicted_s.size()) return Status(core::Code::kInternal, "auto: no such candidate");
    const AlgorithmInfo* a = findAlgorithm(c, ch.predicted_s[k].first);
    if (!a) return Status(core::Code::kInternal, "auto: no algorithm " + ch.predicted_s[k].first);
    algos.push_back(a);
    predicted.push_back(ch.predicted_s[k].second);
  }
  // As measureCandidates: round 0 warms up and sets the batch from the slowest rank's time;
  // the timed rounds take turns, forwards and backwards.
  std::vector<int> iters(n, 1);
  double spent = 0, per_round = 0;  // from times reduced over ranks: every rank agrees
  for (size_t k = 0; k < n; ++k) {
    const int warm_iters = batch(predicted[k], kMaxWarmIters);
    CCSCOPE_ASSIGN_OR_RETURN(double warm, time(*algos[k], warm_iters));
    CCSCOPE_RETURN_IF_ERROR(max_over_ranks(std::span<double>(&warm, 1)));
    iters[k] = batch(warm, kMaxIters, kCloseBatchSeconds);
    spent += (warm_iters + 1) * warm;
    per_round += (iters[k] + 1) * warm;
  }
  const int rounds =
      1 + std::clamp(static_cast<int>((kCloseBudgetSeconds - spent) / std::max(per_round, 1e-9)),
                     kMinCloseTimedRounds, kCloseRounds - 1);
  std::vector<double> t(rounds * n, 0.0);
  for (int round = 1; round < rounds; ++round)
    for (size_t i = 0; i < n; ++i) {
      const size_t k = round % 2 ? i : n - 1 - i;
      CCSCOPE_ASSIGN_OR_RETURN(t[round * n + k], time(*algos[k], iters[k]));
    }
  CCSCOPE_RETURN_IF_ERROR(max_over_ranks(t));
  ch.timed_s.clear();
  for (size_t k = 0; k < n; ++k) {
    std::vector<double> mine;
    for (int round = 1; round < rounds; ++round) mine.push_back(t[round * n + k]);
    ch.timed_s.emplace_back(algos[k]->name, median(mine));
  }
  std::stable_sort(ch.timed_s.begin(), ch.timed_s.end(),
                   [](auto& x, auto& y) { return x.second < y.second; });
  ch.algo = findAlgorithm(c, ch.timed_s.front().first);
  ch.timing_seconds = (core::nowNs() - start) / 1e9;
  return Status::ok();
}

}  // namespace ccscope::collectives
