#include "collectives/schedule_builder.h"

#include <algorithm>

namespace ccscope::collectives {

ScheduleBuilder::Space::iterator ScheduleBuilder::split(Space& sp, uint64_t at) {
  auto it = std::prev(sp.upper_bound(at));  // the range holding `at` (ranges cover everything)
  if (it->first == at) return it;
  Access tail = it->second;
  it->second.end = at;
  return sp.emplace_hint(std::next(it), at, std::move(tail));
}

void ScheduleBuilder::hazards(Span at, uint64_t count, bool write, std::vector<uint32_t>& deps) {
  Space& sp = space(at.buf);
  const uint64_t end = at.offset + count;
  for (auto it = std::prev(sp.upper_bound(at.offset)); it != sp.end() && it->first < end; ++it) {
    deps.push_back(it->second.writer);
    if (write) deps.insert(deps.end(), it->second.readers.begin(), it->second.readers.end());
  }
}

void ScheduleBuilder::record(Span at, uint64_t count, bool write, uint32_t op) {
  Space& sp = space(at.buf);
  const uint64_t end = at.offset + count;
  auto first = split(sp, at.offset);
  split(sp, end);  // map iterators survive insertion: `first` still holds
  if (write) {
    auto last = sp.lower_bound(end);
    sp.erase(std::next(first), last);
    first->second = Access{end, op, {}};
    return;
  }
  for (auto it = first; it != sp.end() && it->first < end; ++it) it->second.readers.push_back(op);
}

uint32_t ScheduleBuilder::add(const Op& op, std::initializer_list<Span> reads, Span write,
                              bool writes) {
  std::vector<uint32_t> deps;
  if (op.count > 0) {
    for (const Span& r : reads) hazards(r, op.count, false, deps);
    if (writes) hazards(write, op.count, true, deps);
  }
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  const uint32_t id = s_.add(op, deps);  // UINT32_MAX entries ("never written") are skipped
  if (op.count > 0) {
    for (const Span& r : reads) record(r, op.count, false, id);
    if (writes) record(write, op.count, true, id);
  }
  return id;
}

uint32_t ScheduleBuilder::send(int peer, uint32_t tag, Span src, uint64_t count) {
  return add(Op{.kind = OpKind::kSend, .peer = peer, .tag = tag, .a = src, .count = count}, {src},
             {}, false);
}

uint32_t ScheduleBuilder::recv(int peer, uint32_t tag, Span dst, uint64_t count) {
  return add(Op{.kind = OpKind::kRecv, .peer = peer, .tag = tag, .dst = dst, .count = count}, {},
             dst, true);
}

uint32_t ScheduleBuilder::reduce(Span dst, Span a, Span b, uint64_t count) {
  return add(Op{.kind = OpKind::kReduce, .dst = dst, .a = a, .b = b, .count = count}, {a, b}, dst,
             true);
}

uint32_t ScheduleBuilder::copy(Span dst, Span src, uint64_t count) {
  return add(Op{.kind = OpKind::kCopy, .dst = dst, .a = src, .count = count}, {src}, dst, true);
}

uint32_t ScheduleBuilder::scale(Span dst, uint64_t count) {
  return add(Op{.kind = OpKind::kScale, .dst = dst, .count = count}, {dst}, dst, true);
}

}  // namespace ccscope::collectives
