// A second schedule simulator, for what schedule_sim.h cannot see: it runs every rank the way
// the executor may (sends and receives in flight while local ops run, in a random order per
// seed), with Input and Output optionally the same buffer (in place), and fails on
//  - a data race: an op touching memory an in-flight receive writes, or writing memory an
//    in-flight send reads, with no dependency ordering them;
//  - a deadlock under rendezvous (a send completes only once its receive is posted);
//  - a contribution counted twice, a scale of a partial sum, a second scale, a scaled value
//    reduced again, or a final element other than all ranks' sum (scaled once for avg).
// Element values are contributor bitmasks, with kScaled marking a scaled value.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "collectives/schedule.h"
#include "rank_memory.h"

namespace ccscope::collectives::testing {

struct LineageOptions {
  bool in_place = false;
  bool avg = false;
  bool rendezvous = true;  // false: a send may complete before its receive is posted
  uint64_t seed = 1;
};

class LineageSim {
 public:
  static constexpr uint64_t kScaled = uint64_t{1} << 63;

  LineageSim(const std::vector<Schedule>& s, uint64_t count, const LineageOptions& o)
      : s_(s), n_(static_cast<int>(s.size())), o_(o), rng_(o.seed) {
    all_ = (uint64_t{1} << n_) - 1;
    for (int r = 0; r < n_; ++r) {
      ranks_.emplace_back(RankMemory(r, count, s[r].scratch_elems, o.in_place));
      Rank& k = ranks_.back();
      std::map<std::pair<int, bool>, uint32_t> lanes;
      for (uint32_t i = 0; i < s[r].ops.size(); ++i) {
        const Op& op = s[r].ops[i];
        k.nth.push_back(comm(op) ? lanes[{op.peer, op.kind == OpKind::kRecv}]++ : 0);
        k.remaining.push_back(op.dep_count);
        if (op.dep_count == 0) k.ready.insert(i);
      }
    }
  }

  // Returns the first violation, or "" when every output element is correct.
  std::string run() {
    while (error_.empty()) {
      std::vector<std::pair<int, uint32_t>> moves;  // (rank, op): start it or complete it
      for (int r = 0; r < n_; ++r) {
        for (uint32_t i : ranks_[r].ready)
          if (canStart(r, i)) moves.push_back({r, i});
        for (uint32_t i : ranks_[r].inflight)
          if (canComplete(r, i)) moves.push_back({r, i});
      }
      if (moves.empty()) break;
      auto [r, i] = moves[std::uniform_int_distribution<size_t>(0, moves.size() - 1)(rng_)];
      if (ranks_[r].inflight.count(i))
        complete(r, i);
      else
        start(r, i);
    }
    if (!error_.empty()) return error_;
    const uint64_t want = all_ | (o_.avg && n_ > 1 ? kScaled : 0);
    for (int r = 0; r < n_; ++r) {
      if (ranks_[r].done != s_[r].ops.size()) return "deadlock: rank " + std::to_string(r);
      for (size_t e = 0; e < ranks_[r].mem.output().size(); ++e)
        if (ranks_[r].mem.output()[e] != want)
          return "rank " + std::to_string(r) + " element " + std::to_string(e) + " is wrong";
    }
    for (auto& [lane, q] : wire_)
      if (!q.empty()) return "unconsumed message from rank " + std::to_string(lane.first);
    return "";
  }

 private:
  struct Rank {
    explicit Rank(RankMemory m) : mem(std::move(m)) {}
    RankMemory mem;
    std::vector<uint32_t> remaining, nth;  // deps left; index in its per-peer lane
    std::set<uint32_t> ready, inflight;
    std::map<std::pair<int, bool>, uint32_t> posted;  // (peer, is_recv) -> messages posted
    size_t done = 0;
  };
  using Lane = std::pair<int, int>;  // (src, dst)

  static bool comm(const Op& o) { return o.kind == OpKind::kSend || o.kind == OpKind::kRecv; }
  bool fail(const std::string& what, int r, uint32_t i) {
    if (error_.empty()) error_ = "rank " + std::to_string(r) + " op " + std::to_string(i) + what;
    return false;
  }
  // In bounds and not racing with a transfer in flight.
  bool usable(int r, uint32_t i, const Span& sp, uint64_t count, bool write) {
    if (!ranks_[r].mem.fits(sp, count)) return fail(" out of bounds", r, i);
    if (ranks_[r].mem.busy(sp, count, write)) return fail(" races with a transfer in flight", r, i);
    return true;
  }

  // Sends and receives start, and complete, in their per-peer lane's order (per-pair FIFO).
  bool canStart(int r, uint32_t i) {
    const Op& o = s_[r].ops[i];
    return !comm(o) || ranks_[r].posted[{o.peer, o.kind == OpKind::kRecv}] == ranks_[r].nth[i];
  }
  bool canComplete(int r, uint32_t i) {
    const Op& o = s_[r].ops[i];
    const uint32_t nth = ranks_[r].nth[i];
    if (o.kind == OpKind::kRecv) return nth == received_[{o.peer, r}] && nth < sent_[{o.peer, r}];
    return nth == sent_[{r, o.peer}] && (!o_.rendezvous || ranks_[o.peer].posted[{r, true}] > nth);
  }

  void start(int r, uint32_t i) {
    Rank& k = ranks_[r];
    const Op& o = s_[r].ops[i];
    k.ready.erase(i);
    if (!comm(o)) return runLocal(r, i);
    const bool is_send = o.kind == OpKind::kSend;
    const Span& sp = is_send ? o.a : o.dst;
    if (!usable(r, i, sp, o.count, !is_send)) return;
    k.mem.inFlight(sp, o.count, is_send, +1);
    ++k.posted[{o.peer, !is_send}];
    k.inflight.insert(i);
  }

  void runLocal(int r, uint32_t i) {
    RankMemory& m = ranks_[r].mem;
    const Op& o = s_[r].ops[i];
    if (!usable(r, i, o.dst, o.count, true)) return;
    if (o.kind != OpKind::kScale && !usable(r, i, o.a, o.count, false)) return;
    if (o.kind == OpKind::kReduce && !usable(r, i, o.b, o.count, false)) return;
    for (uint64_t e = 0; e < o.count && error_.empty(); ++e) {
      uint64_t& out = m.at(o.dst, e);
      if (o.kind == OpKind::kScale) {
        if (out != all_) fail(out & kScaled ? " scales twice" : " scales a partial sum", r, i);
        out |= kScaled;
        continue;
      }
      const uint64_t x = m.at(o.a, e), y = o.kind == OpKind::kReduce ? m.at(o.b, e) : 0;
      if (o.kind == OpKind::kReduce && ((x | y) & kScaled)) fail(" reduces a scaled value", r, i);
      if (x & y) fail(" counts a contribution twice", r, i);
      out = x | y;
    }
    finish(r, i);
  }

  void complete(int r, uint32_t i) {
    Rank& k = ranks_[r];
    const Op& o = s_[r].ops[i];
    k.inflight.erase(i);
    if (o.kind == OpKind::kSend) {  // the data leaves when the send completes
      std::vector<uint64_t> data;
      for (uint64_t e = 0; e < o.count; ++e) data.push_back(k.mem.at(o.a, e));
      wire_[{r, o.peer}].push_back({o.tag, std::move(data)});
      ++sent_[{r, o.peer}];
      k.mem.inFlight(o.a, o.count, true, -1);
    } else {
      auto& q = wire_[{o.peer, r}];
      auto [tag, data] = std::move(q.front());
      q.pop_front();
      ++received_[{o.peer, r}];
      k.mem.inFlight(o.dst, o.count, false, -1);
      if (tag != o.tag || data.size() != o.count) return (void)fail(": message mismatch", r, i);
      for (uint64_t e = 0; e < o.count; ++e) k.mem.at(o.dst, e) = data[e];
    }
    finish(r, i);
  }

  void finish(int r, uint32_t i) {
    Rank& k = ranks_[r];
    const Op& o = s_[r].ops[i];
    ++k.done;
    for (uint32_t j = 0; j < o.next_count; ++j) {
      const uint32_t d = s_[r].dependents[o.next_begin + j];
      if (--k.remaining[d] == 0) k.ready.insert(d);
    }
  }

  const std::vector<Schedule>& s_;
  int n_;
  LineageOptions o_;
  std::mt19937_64 rng_;
  std::vector<Rank> ranks_;
  uint64_t all_ = 0;
  std::map<Lane, std::deque<std::pair<uint32_t, std::vector<uint64_t>>>> wire_;  // sent data
  std::map<Lane, uint32_t> sent_, received_;                                     // completed
  std::string error_;
};

}  // namespace ccscope::collectives::testing
