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

}  // namespace

SimResult simulate(const std::vector<Schedule>& scheds, uint64_t elems) {
  SimSetup setup;
  setup.in_elems.assign(scheds.size(), elems);
  setup.out_elems.assign(scheds.size(), elems);
  setup.input = [](int r, uint64_t) { return uint64_t{1} << r; };
  return simulate(scheds, setup);
}

SimResult simulate(const std::vector<Schedule>& scheds, const SimSetup& setup) {
  const int n = static_cast<int>(scheds.size());
  SimResult res;
  res.elems_sent.assign(n, 0);
  std::vector<RankState> st(n);
  std::map<std::pair<int, int>, std::deque<Msg>> wire;  // (src, dst)
  for (int r = 0; r < n; ++r) {
    const Schedule& s = scheds[r];
    st[r].in.resize(setup.in_elems[r]);
    for (uint64_t i = 0; i < setup.in_elems[r]; ++i) st[r].in[i] = setup.input(r, i);
    st[r].out.assign(setup.out_elems[r], 0);
    st[r].scratch.assign(s.scratch_elems, 0);
    st[r].done.assign(s.ops.size(), false);
    for (const Op& o : s.ops) st[r].remaining.push_back(o.dep_count);
    for (uint32_t i = 0; i < s.ops.size(); ++i) {
      const Op& o = s.ops[i];
      if (o.kind == OpKind::kSend || o.kind == OpKind::kRecv)
        st[r].lanes[{o.peer, o.kind == OpKind::kRecv}].push_back(i);
    }
  }
  auto fail = [&](std::string e) {
    if (res.ok) {
      res.ok = false;
      res.error = std::move(e);
    }
  };
  auto range = [&](std::vector<uint64_t>& v, const Span& sp, uint64_t count, int r, uint32_t i) {
    if (sp.offset + count > v.size())
      fail("rank " + std::to_string(r) + " op " + std::to_string(i) + " out of bounds");
    return res.ok;
  };
  bool progress = true;
  while (progress && res.ok) {
    progress = false;
    for (int r = 0; r < n && res.ok; ++r) {
      const Schedule& s = scheds[r];
      RankState& rs = st[r];
      for (uint32_t i = 0; i < s.ops.size() && res.ok; ++i) {
        if (rs.done[i] || rs.remaining[i] != 0) continue;
        const Op& o = s.ops[i];
        if (o.kind == OpKind::kSend || o.kind == OpKind::kRecv) {
          auto key = std::make_pair(o.peer, int(o.kind == OpKind::kRecv));
          if (rs.lanes[key][rs.lane_pos[key]] != i) continue;  // not its turn yet
          if (o.kind == OpKind::kSend) {
            auto& src = bufOf(rs, o.a.buf);
            if (!range(src, o.a, o.count, r, i)) break;
            wire[{r, o.peer}].push_back(
                {o.tag, {src.begin() + o.a.offset, src.begin() + o.a.offset + o.count}});
            res.elems_sent[r] += o.count;
          } else {
            auto& q = wire[{o.peer, r}];
            if (q.empty()) continue;
            Msg m = std::move(q.front());
            q.pop_front();
            if (m.tag != o.tag || m.data.size() != o.count)
              fail("rank " + std::to_string(r) + " op " + std::to_string(i) + ": message mismatch");
            auto& dst = bufOf(rs, o.dst.buf);
            if (!range(dst, o.dst, o.count, r, i)) break;
            std::copy(m.data.begin(), m.data.end(), dst.begin() + o.dst.offset);
          }
          ++rs.lane_pos[key];
        } else if (o.kind == OpKind::kReduce) {
          auto &d = bufOf(rs, o.dst.buf), &a = bufOf(rs, o.a.buf), &b = bufOf(rs, o.b.buf);
          if (!range(d, o.dst, o.count, r, i) || !range(a, o.a, o.count, r, i) ||
              !range(b, o.b, o.count, r, i))
            break;
          for (uint64_t k = 0; k < o.count; ++k) {
            uint64_t x = a[o.a.offset + k], y = b[o.b.offset + k];
            if (x & y) fail("rank " + std::to_string(r) + " reduces a contribution twice");
            d[o.dst.offset + k] = x | y;
          }
        } else if (o.kind == OpKind::kCopy) {
          auto &d = bufOf(rs, o.dst.buf), &a = bufOf(rs, o.a.buf);
          if (!range(d, o.dst, o.count, r, i) || !range(a, o.a, o.count, r, i)) break;
          for (uint64_t k = 0; k < o.count; ++k) d[o.dst.offset + k] = a[o.a.offset + k];
        }
        rs.done[i] = true;
        progress = true;
        for (uint32_t k = 0; k < o.next_count; ++k) --rs.remaining[s.dependents[o.next_begin + k]];
      }
    }
  }
  for (int r = 0; r < n && res.ok; ++r)
    for (bool d : st[r].done)
      if (!d) {
        fail("rank " + std::to_string(r) + " deadlocked: an op never ran");
        break;
      }
  for (auto& [k, q] : wire)
    if (!q.empty()) fail("unconsumed message from rank " + std::to_string(k.first));
  for (int r = 0; r < n; ++r) res.output.push_back(st[r].out);
  return res;
}

}  // namespace ccscope::collectives::testing
