// Checks the schedule simulator does not make, for schedules tested without a transport:
//  - findRace: two ops touching overlapping elements (one writing) with no dependency path
//    between them, i.e. an order the executor may run either way. With in-place offsets given,
//    Input and Output are resolved into the one receive buffer the harness aliases them to.
//  - findRendezvousDeadlock: progress when a send completes only once its receive is posted
//    (large messages on real transports); the simulator delivers every send eagerly.
//  - inPlaceView: the same schedule with Input and Output mapped into one buffer (the
//    simulator's output) behind a first copy of the input there, so simulate() runs it in place.
// Header-only: the test target compiles every *_test.cc plus schedule_sim.cc.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/schedule.h"

namespace ccscope::collectives::testing {

struct InPlace {
  bool enabled = false;
  uint64_t in_offset = 0, out_offset = 0;  // Geometry::in_place_*_offset
};

inline Span resolve(const Span& sp, const InPlace& ip) {
  if (!ip.enabled || sp.buf == Buf::kScratch) return sp;
  return {Buf::kOutput, sp.offset + (sp.buf == Buf::kInput ? ip.in_offset : ip.out_offset)};
}

// Appends an op to a hand-made schedule: a deliberately broken one, or a transformed copy.
// Schedules under test come from ScheduleBuilder; only tests write ops and edges by hand.
inline uint32_t appendOp(Schedule& s, const Op& op, const std::vector<uint32_t>& after = {}) {
  Op o = op;
  o.dep_begin = static_cast<uint32_t>(s.deps.size());
  o.dep_count = static_cast<uint32_t>(after.size());
  s.deps.insert(s.deps.end(), after.begin(), after.end());
  s.ops.push_back(o);
  return static_cast<uint32_t>(s.ops.size() - 1);
}

inline Schedule inPlaceView(const Schedule& s, uint64_t in_elems, const InPlace& ip) {
  Schedule t = s;
  t.ops.clear();
  t.deps.clear();
  const uint32_t load = appendOp(t, Op{.kind = OpKind::kCopy,
                                       .dst = {Buf::kOutput, ip.in_offset},
                                       .a = {Buf::kInput, 0},
                                       .count = in_elems});
  for (const Op& o : s.ops) {
    Op c = o;
    c.dst = resolve(o.dst, ip);
    c.a = resolve(o.a, ip);
    c.b = resolve(o.b, ip);
    std::vector<uint32_t> after{load};
    for (uint32_t k = 0; k < o.dep_count; ++k) after.push_back(s.deps[o.dep_begin + k] + 1);
    appendOp(t, c, after);
  }
  t.finalize();
  return t;
}

// Whether a dependency path orders two ops (dependencies always point to earlier ops).
class Ancestry {
 public:
  explicit Ancestry(const Schedule& s)
      : words_((s.ops.size() + 63) / 64), bits_(s.ops.size() * words_) {
    for (uint32_t i = 0; i < s.ops.size(); ++i)
      for (uint32_t k = 0; k < s.ops[i].dep_count; ++k) {
        uint32_t d = s.deps[s.ops[i].dep_begin + k];
        for (size_t w = 0; w < words_; ++w) bits_[i * words_ + w] |= bits_[d * words_ + w];
        bits_[i * words_ + d / 64] |= uint64_t{1} << (d % 64);
      }
  }
  bool ordered(uint32_t a, uint32_t b) const {
    if (a > b) std::swap(a, b);
    return (bits_[b * words_ + a / 64] >> (a % 64)) & 1;
  }

 private:
  size_t words_;
  std::vector<uint64_t> bits_;
};

inline std::string findRace(const Schedule& s, const InPlace& ip = {}) {
  struct Access {
    uint64_t lo, hi;
    uint32_t op;
    bool write;
  };
  std::map<Buf, std::vector<Access>> by_buf;
  auto touch = [&](const Span& sp, uint64_t n, uint32_t op, bool write) {
    if (n == 0) return;
    Span r = resolve(sp, ip);
    by_buf[r.buf].push_back({r.offset, r.offset + n, op, write});
  };
  for (uint32_t i = 0; i < s.ops.size(); ++i) {
    const Op& o = s.ops[i];
    Span d = resolve(o.dst, ip), a = resolve(o.a, ip);
    if (o.kind == OpKind::kCopy && d.buf == a.buf && d.offset == a.offset) continue;  // skipped
    if (o.kind == OpKind::kSend || o.kind == OpKind::kCopy || o.kind == OpKind::kReduce)
      touch(o.a, o.count, i, false);
    if (o.kind == OpKind::kReduce) touch(o.b, o.count, i, false);
    if (o.kind != OpKind::kSend) touch(o.dst, o.count, i, true);  // scale reads and writes dst
  }
  const Ancestry ancestry(s);
  for (auto& [buf, acc] : by_buf) {
    std::sort(acc.begin(), acc.end(), [](const Access& x, const Access& y) { return x.lo < y.lo; });
    for (size_t i = 0; i < acc.size(); ++i)
      for (size_t j = i + 1; j < acc.size() && acc[j].lo < acc[i].hi; ++j) {
        const Access &x = acc[i], &y = acc[j];
        if ((x.write || y.write) && x.op != y.op && !ancestry.ordered(x.op, y.op))
          return "rank " + std::to_string(s.rank) + ": ops " + std::to_string(x.op) + " and " +
                 std::to_string(y.op) + " touch the same elements of buffer " +
                 std::to_string(static_cast<int>(buf)) + " in no fixed order";
      }
  }
  return "";
}

// Ranks that disagree on how many messages they exchange (a hang on any transport).
inline std::string laneMismatch(const std::vector<Schedule>& scheds) {
  std::map<std::tuple<int, int, bool>, size_t> lanes;  // (rank, peer, is_recv) -> messages
  for (const Schedule& s : scheds)
    for (const Op& o : s.ops)
      if (o.kind == OpKind::kSend || o.kind == OpKind::kRecv)
        ++lanes[{s.rank, o.peer, o.kind == OpKind::kRecv}];
  for (const auto& [key, count] : lanes) {
    auto [r, peer, is_recv] = key;
    auto other = lanes.find({peer, r, !is_recv});
    if (other == lanes.end() || other->second != count)
      return "ranks " + std::to_string(r) + " and " + std::to_string(peer) +
             " disagree on how many messages they exchange";
  }
  return "";
}

inline std::string findRendezvousDeadlock(const std::vector<Schedule>& scheds) {
  const int n = static_cast<int>(scheds.size());
  struct Rank {
    std::vector<uint32_t> remaining;
    std::vector<uint8_t> posted, done;
    std::map<std::pair<int, int>, std::vector<uint32_t>> lanes;  // (peer, is_recv) -> ops
    std::map<std::pair<int, int>, size_t> cursor;
    std::vector<size_t> lane_pos;
  };
  std::vector<Rank> st(n);
  for (int r = 0; r < n; ++r) {
    const Schedule& s = scheds[r];
    st[r].posted.assign(s.ops.size(), 0);
    st[r].done.assign(s.ops.size(), 0);
    st[r].lane_pos.assign(s.ops.size(), 0);
    for (uint32_t i = 0; i < s.ops.size(); ++i) {
      st[r].remaining.push_back(s.ops[i].dep_count);
      const Op& o = s.ops[i];
      if (o.kind != OpKind::kSend && o.kind != OpKind::kRecv) continue;
      auto& lane = st[r].lanes[{o.peer, o.kind == OpKind::kRecv}];
      st[r].lane_pos[i] = lane.size();
      lane.push_back(i);
    }
  }
  if (std::string e = laneMismatch(scheds); !e.empty()) return e;
  auto finish = [&](int r, uint32_t i) {
    st[r].done[i] = 1;
    const Op& o = scheds[r].ops[i];
    for (uint32_t k = 0; k < o.next_count; ++k)
      --st[r].remaining[scheds[r].dependents[o.next_begin + k]];
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < n; ++r) {
      for (auto& [key, lane] : st[r].lanes)  // post in lane order once dependencies are met
        for (size_t& c = st[r].cursor[key]; c < lane.size() && st[r].remaining[lane[c]] == 0; ++c)
          st[r].posted[lane[c]] = 1, progress = true;
      for (uint32_t i = 0; i < scheds[r].ops.size(); ++i) {
        const Op& o = scheds[r].ops[i];
        if (st[r].done[i] || st[r].remaining[i] != 0) continue;
        bool comm = o.kind == OpKind::kSend || o.kind == OpKind::kRecv;
        if (comm) {
          const auto& peer_lane = st[o.peer].lanes[{r, o.kind == OpKind::kSend}];
          if (!st[r].posted[i] || !st[o.peer].posted[peer_lane[st[r].lane_pos[i]]]) continue;
        }
        finish(r, i);
        progress = true;
      }
    }
  }
  for (int r = 0; r < n; ++r)
    for (uint32_t i = 0; i < scheds[r].ops.size(); ++i)
      if (!st[r].done[i])
        return "rank " + std::to_string(r) + " op " + std::to_string(i) +
               " never completes when sends wait for their receives";
  return "";
}

}  // namespace ccscope::collectives::testing
