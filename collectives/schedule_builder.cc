#include "collectives/schedule_builder.h"

#include <algorithm>

#include "collectives/collective.h"
#include "core/check.h"

namespace ccscope::collectives {

ScheduleBuilder::ScheduleBuilder(const ScheduleParams& p) {
  s_.rank = p.rank;
  s_.ranks = p.ranks;
  s_.count = p.count;
  const Geometry g = geometry(p.collective, p.count, p.ranks, p.rank, p.plan);
  layouts_.emplace_back();
  if (g.in_place_supported)
    layouts_.push_back(Layout{true, g.in_place_in_offset, g.in_place_out_offset, {}});
  for (Layout& l : layouts_)
    for (Space& sp : l.spaces) sp.emplace(0, Access{UINT64_MAX, kNoOp, {}});
}

Span ScheduleBuilder::resolve(const Layout& l, Span s) {
  if (!l.in_place || s.buf == Buf::kScratch) return s;
  return {Buf::kOutput, s.offset + (s.buf == Buf::kInput ? l.in_offset : l.out_offset)};
}

bool ScheduleBuilder::runs(const Layout& l, const Op& op) {
  if (op.kind != OpKind::kCopy) return true;
  const Span d = resolve(l, op.dst), a = resolve(l, op.a);
  return d.buf != a.buf || d.offset != a.offset;
}

ScheduleBuilder::Space::iterator ScheduleBuilder::split(Space& sp, uint64_t at) {
  auto it = std::prev(sp.upper_bound(at));  // the range holding `at` (ranges cover everything)
  if (it->first == at) return it;
  Access tail = it->second;
  it->second.end = at;
  return sp.emplace_hint(std::next(it), at, std::move(tail));
}

void ScheduleBuilder::hazards(Space& sp, uint64_t begin, uint64_t end, bool write,
                              std::vector<uint32_t>& deps) {
  for (auto it = std::prev(sp.upper_bound(begin)); it != sp.end() && it->first < end; ++it) {
    deps.push_back(it->second.writer);
    if (write) deps.insert(deps.end(), it->second.readers.begin(), it->second.readers.end());
  }
}

void ScheduleBuilder::record(Space& sp, uint64_t begin, uint64_t end, bool write, uint32_t op) {
  auto first = split(sp, begin);
  split(sp, end);  // map iterators survive insertion: `first` still holds
  if (write) {
    auto last = sp.lower_bound(end);
    sp.erase(std::next(first), last);
    first->second = Access{end, op, {}};
    return;
  }
  for (auto it = first; it != sp.end() && it->first < end; ++it) it->second.readers.push_back(op);
}

uint32_t ScheduleBuilder::add(const Op& op, std::initializer_list<Touch> touches,
                              const After& after) {
  if (op.count == 0) return kNoOp;
  std::vector<uint32_t> deps = after;
  for (Layout& l : layouts_) {
    if (!runs(l, op)) continue;
    for (const Touch& t : touches) {
      const Span r = resolve(l, t.at);
      hazards(l.spaces[static_cast<size_t>(r.buf)], r.offset, r.offset + op.count, t.write, deps);
    }
  }
  const uint32_t id = emit(op, std::move(deps));
  for (Layout& l : layouts_) {
    if (!runs(l, op)) continue;
    // Reads first: an op that reads and writes the same range (scale, a reduce into an operand)
    // leaves the range with itself as writer and no readers.
    for (bool write : {false, true})
      for (const Touch& t : touches) {
        if (t.write != write) continue;
        const Span r = resolve(l, t.at);
        record(l.spaces[static_cast<size_t>(r.buf)], r.offset, r.offset + op.count, write, id);
      }
  }
  return id;
}

uint32_t ScheduleBuilder::emit(const Op& op, std::vector<uint32_t> deps) {
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  const auto id = static_cast<uint32_t>(s_.ops.size());
  Op o = op;
  o.dep_begin = static_cast<uint32_t>(s_.deps.size());
  for (uint32_t d : deps) {
    if (d == kNoOp) continue;  // "never written", or an `after` entry that was not emitted
    CCSCOPE_CHECK(d < id, "dependency on a later op");
    s_.deps.push_back(d);
  }
  o.dep_count = static_cast<uint32_t>(s_.deps.size()) - o.dep_begin;
  s_.ops.push_back(o);
  return id;
}

uint32_t ScheduleBuilder::send(int peer, uint32_t tag, Span src, uint64_t count,
                               const After& after) {
  return add(Op{.kind = OpKind::kSend, .peer = peer, .tag = tag, .a = src, .count = count},
             {{src, false}}, after);
}

uint32_t ScheduleBuilder::recv(int peer, uint32_t tag, Span dst, uint64_t count,
                               const After& after) {
  return add(Op{.kind = OpKind::kRecv, .peer = peer, .tag = tag, .dst = dst, .count = count},
             {{dst, true}}, after);
}

uint32_t ScheduleBuilder::reduce(Span dst, Span a, Span b, uint64_t count) {
  return add(Op{.kind = OpKind::kReduce, .dst = dst, .a = a, .b = b, .count = count},
             {{a, false}, {b, false}, {dst, true}}, {});
}

uint32_t ScheduleBuilder::copy(Span dst, Span src, uint64_t count) {
  return add(Op{.kind = OpKind::kCopy, .dst = dst, .a = src, .count = count},
             {{src, false}, {dst, true}}, {});
}

uint32_t ScheduleBuilder::scale(Span dst, uint64_t count) {
  return add(Op{.kind = OpKind::kScale, .dst = dst, .count = count}, {{dst, false}, {dst, true}},
             {});
}

uint32_t ScheduleBuilder::sendSignal(int peer, uint32_t tag, const After& after) {
  return emit(Op{.kind = OpKind::kSend, .peer = peer, .tag = tag}, after);
}

uint32_t ScheduleBuilder::recvSignal(int peer, uint32_t tag, const After& after) {
  return emit(Op{.kind = OpKind::kRecv, .peer = peer, .tag = tag}, after);
}

Schedule ScheduleBuilder::finish() {
  s_.finalize();
  return std::move(s_);
}

Schedule copySchedule(const ScheduleParams& p, uint64_t elems) {
  ScheduleBuilder b(p);
  b.copy(atOut(0), atIn(0), elems);
  return b.finish();
}

}  // namespace ccscope::collectives
