#include "schedule_sim.h"

#include <deque>
#include <map>

namespace ccscope::collectives::testing {

namespace {

struct Msg {
  uint32_t tag;
  std::vector<uint64_t> data;
};

struct RankState {
  std::vector<uint64_t> in, out, scratch;
  std::vector<uint32_t> remaining;
  std::vector<bool> done;
  std::map<std::pair<int, int>, size_t> lane_pos;  // (peer, is_recv) -> next index in lane
  std::map<std::pair<int, int>, std::vector<uint32_t>> lanes;
};

std::vector<uint64_t>& bufOf(RankState& st, Buf b) {
  return b == Buf::kInput ? st.in : b == Buf::kOutput ? st.out : st.scratch;
}

// Iterator to element `at` of v; callers checked the span with inRange(), so `at` <= v.size().
std::vector<uint64_t>::iterator iterAt(std::vector<uint64_t>& v, uint64_t at) {
  return v.begin() + static_cast<std::ptrdiff_t>(at);
}

// Runs every rank's schedule in rounds: each round runs every op whose dependencies are met and,
// for a send or receive, whose turn in its (peer, direction) lane came; a receive also waits
// for its message. Stops at the first violation or when a round runs nothing.
class Simulator {
 public:
  Simulator(const std::vector<Schedule>& scheds, const SimSetup& setup)
      : scheds_(scheds), st_(scheds.size()) {
    res_.elems_sent.assign(scheds.size(), 0);
    for (size_t r = 0; r < scheds.size(); ++r) {
      const Schedule& s = scheds[r];
      RankState& rs = st_[r];
      rs.in.resize(setup.in_elems[r]);
      for (uint64_t i = 0; i < setup.in_elems[r]; ++i) rs.in[i] = setup.input(int(r), i);
      rs.out.assign(setup.out_elems[r], 0);
      rs.scratch.assign(s.scratch_elems, 0);
      rs.done.assign(s.ops.size(), false);
      for (const Op& o : s.ops) rs.remaining.push_back(o.dep_count);
      for (uint32_t i = 0; i < s.ops.size(); ++i) {
        const Op& o = s.ops[i];
        if (o.kind == OpKind::kSend || o.kind == OpKind::kRecv)
          rs.lanes[{o.peer, o.kind == OpKind::kRecv}].push_back(i);
      }
    }
  }

  SimResult run() {
    const int n = static_cast<int>(scheds_.size());
    bool progress = true;
    while (progress && res_.ok) {
      progress = false;
      for (int r = 0; r < n && res_.ok; ++r)
        for (uint32_t i = 0; i < scheds_[r].ops.size() && res_.ok; ++i)
          progress = tryRun(r, i) || progress;
    }
    checkFinished();
    for (int r = 0; r < n; ++r) res_.output.push_back(st_[r].out);
    return std::move(res_);
  }

 private:
  void fail(std::string e) {
    if (res_.ok) {
      res_.ok = false;
      res_.error = std::move(e);
    }
  }

  bool inRange(const std::vector<uint64_t>& v, const Span& sp, uint64_t count, int r, uint32_t i) {
    if (sp.offset + count > v.size())
      fail("rank " + std::to_string(r) + " op " + std::to_string(i) + " out of bounds");
    return res_.ok;
  }

  // Runs op i of rank r if it can run now; true when it ran.
  bool tryRun(int r, uint32_t i) {
    RankState& rs = st_[r];
    if (rs.done[i] || rs.remaining[i] != 0) return false;
    const Schedule& s = scheds_[r];
    const Op& o = s.ops[i];
    const bool comm = o.kind == OpKind::kSend || o.kind == OpKind::kRecv;
    if (!(comm ? tryComm(r, i) : runLocal(r, i))) return false;
    rs.done[i] = true;
    for (uint32_t k = 0; k < o.next_count; ++k) --rs.remaining[s.dependents[o.next_begin + k]];
    return true;
  }

  bool tryComm(int r, uint32_t i) {
    RankState& rs = st_[r];
    const Op& o = scheds_[r].ops[i];
    auto key = std::make_pair(o.peer, int(o.kind == OpKind::kRecv));
    if (rs.lanes[key][rs.lane_pos[key]] != i) return false;  // not its turn yet
    if (!(o.kind == OpKind::kSend ? send(r, i) : receive(r, i))) return false;
    ++rs.lane_pos[key];
    return true;
  }

  bool send(int r, uint32_t i) {
    const Op& o = scheds_[r].ops[i];
    auto& src = bufOf(st_[r], o.a.buf);
    if (!inRange(src, o.a, o.count, r, i)) return false;
    wire_[{r, o.peer}].push_back(
        {o.tag, {iterAt(src, o.a.offset), iterAt(src, o.a.offset + o.count)}});
    res_.elems_sent[r] += o.count;
    return true;
  }

  bool receive(int r, uint32_t i) {
    const Op& o = scheds_[r].ops[i];
    auto& q = wire_[{o.peer, r}];
    if (q.empty()) return false;
    Msg m = std::move(q.front());
    q.pop_front();
    if (m.tag != o.tag || m.data.size() != o.count)
      fail("rank " + std::to_string(r) + " op " + std::to_string(i) + ": message mismatch");
    auto& dst = bufOf(st_[r], o.dst.buf);
    if (!inRange(dst, o.dst, o.count, r, i)) return false;
    std::copy(m.data.begin(), m.data.end(), iterAt(dst, o.dst.offset));
    return true;
  }

  // Reduce ORs contribution bits and flags a bit present on both sides; scale changes nothing.
  bool runLocal(int r, uint32_t i) {
    const Op& o = scheds_[r].ops[i];
    RankState& rs = st_[r];
    auto &d = bufOf(rs, o.dst.buf), &a = bufOf(rs, o.a.buf), &b = bufOf(rs, o.b.buf);
    if (o.kind == OpKind::kReduce) {
      if (!inRange(d, o.dst, o.count, r, i) || !inRange(a, o.a, o.count, r, i) ||
          !inRange(b, o.b, o.count, r, i))
        return false;
      for (uint64_t k = 0; k < o.count; ++k) {
        uint64_t x = a[o.a.offset + k], y = b[o.b.offset + k];
        if (x & y) fail("rank " + std::to_string(r) + " reduces a contribution twice");
        d[o.dst.offset + k] = x | y;
      }
    } else if (o.kind == OpKind::kCopy) {
      if (!inRange(d, o.dst, o.count, r, i) || !inRange(a, o.a, o.count, r, i)) return false;
      for (uint64_t k = 0; k < o.count; ++k) d[o.dst.offset + k] = a[o.a.offset + k];
    }
    return true;
  }

  // Every op ran and every message was received.
  void checkFinished() {
    for (size_t r = 0; r < st_.size() && res_.ok; ++r)
      for (bool d : st_[r].done)
        if (!d) {
          fail("rank " + std::to_string(r) + " deadlocked: an op never ran");
          break;
        }
    for (auto& [k, q] : wire_)
      if (!q.empty()) fail("unconsumed message from rank " + std::to_string(k.first));
  }

  const std::vector<Schedule>& scheds_;
  std::vector<RankState> st_;
  std::map<std::pair<int, int>, std::deque<Msg>> wire_;  // (src, dst)
  SimResult res_;
};

}  // namespace

SimResult simulate(const std::vector<Schedule>& scheds, uint64_t elems) {
  SimSetup setup;
  setup.in_elems.assign(scheds.size(), elems);
  setup.out_elems.assign(scheds.size(), elems);
  setup.input = [](int r, uint64_t) { return uint64_t{1} << r; };
  return simulate(scheds, setup);
}

SimResult simulate(const std::vector<Schedule>& scheds, const SimSetup& setup) {
  return Simulator(scheds, setup).run();
}

}  // namespace ccscope::collectives::testing
