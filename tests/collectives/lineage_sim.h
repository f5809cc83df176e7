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
#include <vector>

#include "collectives/schedule.h"

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
      : s_(s), n_(static_cast<int>(s.size())), o_(o), rng_(o.seed), ranks_(s.size()) {
    all_ = n_ >= 63 ? ~kScaled : (uint64_t{1} << n_) - 1;
    for (int r = 0; r < n_; ++r) {
      Rank& k = ranks_[r];
      k.mem[0].assign(count, uint64_t{1} << r);  // Input
      k.mem[1].assign(count, o.in_place ? uint64_t{1} << r : 0);
      k.mem[2].assign(s[r].scratch_elems, 0);
      for (int b = 0; b < 3; ++b) k.writing[b].assign(k.mem[b].size(), 0), k.reading[b] = k.writing[b];
      k.remaining.resize(s[r].ops.size());
      std::map<std::pair<int, bool>, uint32_t> lanes;
      for (uint32_t i = 0; i < s[r].ops.size(); ++i) {
        const Op& o = s[r].ops[i];
        k.nth.push_back(comm(o) ? lanes[{o.peer, o.kind == OpKind::kRecv}]++ : 0);
        if ((k.remaining[i] = o.dep_count) == 0) k.ready.insert(i);
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
      if (ranks_[r].inflight.count(i)) complete(r, i); else start(r, i);
    }
    if (!error_.empty()) return error_;
    for (int r = 0; r < n_; ++r) {
      if (ranks_[r].done != s_[r].ops.size()) return "deadlock: rank " + std::to_string(r) + " stuck";
      const uint64_t want = all_ | (o_.avg && n_ > 1 ? kScaled : 0);
      for (size_t e = 0; e < ranks_[r].mem[1].size(); ++e)
        if (ranks_[r].mem[1][e] != want)
          return "rank " + std::to_string(r) + " element " + std::to_string(e) + " is wrong";
    }
    for (auto& [lane, q] : wire_)
      if (!q.empty()) return "unconsumed message " + std::to_string(lane.first) + "->" + std::to_string(lane.second);
    return "";
  }

 private:
  struct Rank {
    std::vector<uint64_t> mem[3];
    std::vector<uint16_t> writing[3], reading[3];  // in-flight receives / sends per element
    std::vector<uint32_t> remaining, nth;  // deps left; index in its per-peer lane
    std::set<uint32_t> ready, inflight;
    std::map<std::pair<int, bool>, uint32_t> posted;  // (peer, is_recv) -> messages posted
    size_t done = 0;
  };
  struct Msg {
    uint32_t tag;
    std::vector<uint64_t> data;
  };

  int bufIndex(Buf b) const { return b == Buf::kInput ? (o_.in_place ? 1 : 0) : b == Buf::kOutput ? 1 : 2; }
  bool comm(const Op& o) const { return o.kind == OpKind::kSend || o.kind == OpKind::kRecv; }
  std::string where(int r, uint32_t i) const { return "rank " + std::to_string(r) + " op " + std::to_string(i); }

  // Visits the counters of [sp, sp+count); false (and an error) if out of bounds.
  template <class F>
  bool each(int r, uint32_t i, const Span& sp, uint64_t count, F&& f) {
    int b = bufIndex(sp.buf);
    if (sp.offset + count > ranks_[r].mem[b].size()) return fail(where(r, i) + " out of bounds");
    for (uint64_t e = sp.offset; e < sp.offset + count; ++e) f(b, e);
    return true;
  }
  bool fail(std::string e) { if (error_.empty()) error_ = std::move(e); return false; }
  // Fails when [sp, +count) is being written (and, for writers, read) by a transfer in flight.
  bool clear(int r, uint32_t i, const Span& sp, uint64_t count, bool write) {
    bool ok = true;
    Rank& k = ranks_[r];
    if (!each(r, i, sp, count, [&](int b, uint64_t e) {
          ok = ok && !k.writing[b][e] && !(write && k.reading[b][e]);
        })) return false;
    return ok || fail(where(r, i) + " races with a transfer in flight");
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
    if (comm(o)) {
      const Span& sp = o.kind == OpKind::kSend ? o.a : o.dst;
      if (!clear(r, i, sp, o.count, o.kind == OpKind::kRecv)) return;
      each(r, i, sp, o.count, [&](int b, uint64_t e) { ++(o.kind == OpKind::kSend ? k.reading : k.writing)[b][e]; });
      ++k.posted[{o.peer, o.kind == OpKind::kRecv}];
      k.inflight.insert(i);
      return;
    }
    runLocal(r, i);
    finish(r, i);
  }

  void runLocal(int r, uint32_t i) {
    Rank& k = ranks_[r];
    const Op& o = s_[r].ops[i];
    if (!clear(r, i, o.dst, o.count, true)) return;
    if (o.kind != OpKind::kScale && !clear(r, i, o.a, o.count, false)) return;
    if (o.kind == OpKind::kReduce && !clear(r, i, o.b, o.count, false)) return;
    auto& d = k.mem[bufIndex(o.dst.buf)];
    for (uint64_t e = 0; e < o.count && error_.empty(); ++e) {
      uint64_t& out = d[o.dst.offset + e];
      if (o.kind == OpKind::kScale) {
        if (out != all_) fail(where(r, i) + (out & kScaled ? " scales twice" : " scales a partial sum"));
        out |= kScaled;
        continue;
      }
      uint64_t x = k.mem[bufIndex(o.a.buf)][o.a.offset + e];
      if (o.kind == OpKind::kCopy) { out = x; continue; }
      uint64_t y = k.mem[bufIndex(o.b.buf)][o.b.offset + e];
      if ((x | y) & kScaled) fail(where(r, i) + " reduces a scaled value");
      if (x & y) fail(where(r, i) + " counts a contribution twice");
      out = x | y;
    }
  }

  void complete(int r, uint32_t i) {
    Rank& k = ranks_[r];
    const Op& o = s_[r].ops[i];
    k.inflight.erase(i);
    if (o.kind == OpKind::kSend) {
      auto& src = k.mem[bufIndex(o.a.buf)];
      wire_[{r, o.peer}].push_back({o.tag, {src.begin() + o.a.offset, src.begin() + o.a.offset + o.count}});
      ++sent_[{r, o.peer}];
      each(r, i, o.a, o.count, [&](int b, uint64_t e) { --k.reading[b][e]; });
    } else {
      auto& q = wire_[{o.peer, r}];
      Msg m = std::move(q.front());
      q.pop_front();
      ++received_[{o.peer, r}];
      if (m.tag != o.tag || m.data.size() != o.count) fail(where(r, i) + ": message mismatch");
      each(r, i, o.dst, o.count, [&](int b, uint64_t e) { --k.writing[b][e]; });
      if (error_.empty()) std::copy(m.data.begin(), m.data.end(), k.mem[bufIndex(o.dst.buf)].begin() + o.dst.offset);
    }
    finish(r, i);
  }

  void finish(int r, uint32_t i) {
    Rank& k = ranks_[r];
    const Op& o = s_[r].ops[i];
    ++k.done;
    for (uint32_t j = 0; j < o.next_count; ++j) {
      uint32_t d = s_[r].dependents[o.next_begin + j];
      if (--k.remaining[d] == 0) k.ready.insert(d);
    }
  }

  const std::vector<Schedule>& s_;
  int n_;
  LineageOptions o_;
  std::mt19937_64 rng_;
  std::vector<Rank> ranks_;
  uint64_t all_ = 0;
  std::map<std::pair<int, int>, std::deque<Msg>> wire_;   // (src, dst): completed sends
  std::map<std::pair<int, int>, uint32_t> sent_, received_;  // (src, dst): completed
  std::string error_;
};

}  // namespace ccscope::collectives::testing
