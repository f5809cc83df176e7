#include "model/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <utility>

namespace ccscope::model {

using collectives::Op;
using collectives::OpKind;
using collectives::Schedule;
using core::Code;
using core::Status;

std::array<double, kFeatures> paramVector(const Params& p) {
  std::array<double, kFeatures> v{};
  for (int c = 0; c < kHopClasses; ++c) {
    v[msgIndex(static_cast<HopClass>(c))] = p.alpha[c];
    v[byteIndex(static_cast<HopClass>(c))] = p.beta[c];
  }
  v[kReduceIndex] = p.gamma;
  v[kBeyondCacheIndex] = p.delta;
  return v;
}

Params paramsFrom(const std::array<double, kFeatures>& v) {
  Params p;
  for (int c = 0; c < kHopClasses; ++c) {
    p.alpha[c] = v[msgIndex(static_cast<HopClass>(c))];
    p.beta[c] = v[byteIndex(static_cast<HopClass>(c))];
  }
  p.gamma = v[kReduceIndex];
  p.delta = v[kBeyondCacheIndex];
  return p;
}

double beyondCache(double working_set, double llc) {
  return llc > 0 && working_set > llc ? 1 - llc / working_set : 0;
}

namespace {

// A moment with the critical path that led to it.
struct Stamp {
  double t = 0;
  Counts c{};
};

Stamp later(const Stamp& a, const Stamp& b) { return a.t >= b.t ? a : b; }

Stamp plus(Stamp s, int index, double amount, double param) {
  s.t += amount * param;
  s.c[index] += amount;
  return s;
}

// A copy or scale reads one operand where a reduction reads two: two thirds of its traffic.
constexpr double kCopyWeight = 2.0 / 3.0;

class Simulation {
 public:
  Simulation(const SimInput& in, const Params& p) : in_(in), p_(p) {}

  core::Result<SimResult> run() {
    const int n = in_.ranks;
    size_t total = 0;
    for (int r = 0; r < n; ++r) {
      collectives::ScheduleParams sp{in_.algo->collective, r, n, in_.count, in_.segment_elems};
      sched_.push_back(in_.algo->build(sp));
      base_.push_back(total);
      total += sched_.back().ops.size();
    }
    owner_.resize(total);
    for (int r = 0; r < n; ++r)
      std::fill(owner_.begin() + static_cast<std::ptrdiff_t>(base_[r]),
                owner_.begin() + static_cast<std::ptrdiff_t>(base_[r] + sched_[r].ops.size()), r);
    ready_.assign(total, Stamp{});
    left_.assign(total, 0);
    work_.assign(n, Counts{});
    out_free_.assign(n, Stamp{});
    in_free_.assign(n, Stamp{});
    cpu_free_.assign(n, Stamp{});
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < sched_[r].ops.size(); ++i) {
        left_[base_[r] + i] = sched_[r].ops[i].dep_count;
        if (left_[base_[r] + i] == 0) queue_.emplace(0.0, base_[r] + i);
      }
    while (!queue_.empty()) {
      size_t g = queue_.top().second;
      queue_.pop();
      start(g);
    }
    if (done_ != total)
      return Status(Code::kInternal, fmt::format("{} on {} ranks: {} of {} ops never ran",
                                                 in_.algo->name, n, total - done_, total));
    SimResult r{end_.t, end_.c, total, false};
    cpuBound(r);
    return r;
  }

  // The busiest machine's CPU work over its cores, when that is longer than the critical path.
  void cpuBound(SimResult& r) const {
    if (in_.cores <= 0) return;
    std::vector<Counts> machine;
    const auto& of = in_.machine_of.empty() ? in_.host_of : in_.machine_of;
    for (int rank = 0; rank < in_.ranks; ++rank) {
      size_t m = of.empty() ? 0 : static_cast<size_t>(of[rank]);
      if (machine.size() <= m) machine.resize(m + 1, Counts{});
      for (int k = 0; k < kFeatures; ++k) machine[m][k] += work_[rank][k] / in_.cores;
    }
    auto v = paramVector(p_);
    for (const auto& c : machine) {
      double t = 0;
      for (int k = 0; k < kFeatures; ++k) t += c[k] * v[k];
      if (t > r.seconds) r.seconds = t, r.counts = c, r.cpu_bound = true;
    }
  }

 private:
  std::pair<int, size_t> locate(size_t g) const {
    int r = owner_[g];
    return {r, g - base_[r]};
  }

  void start(size_t g) {
    auto [r, i] = locate(g);
    const Op& op = sched_[r].ops[i];
    double bytes = static_cast<double>(op.count * in_.elem);
    if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
      bool send = op.kind == OpKind::kSend;
      int src = send ? r : op.peer, dst = send ? op.peer : r;
      uint64_t pair = static_cast<uint64_t>(src) * static_cast<uint64_t>(in_.ranks) +
                      static_cast<uint64_t>(dst);
      uint64_t key = (pair << 32) | op.tag;  // a pair's message index is its tag
      auto it = waiting_.find(key);
      if (it == waiting_.end()) {
        waiting_.emplace(key, g);
        return;
      }
      size_t other = it->second;
      waiting_.erase(it);
      transfer(src, dst, bytes, later(ready_[g], ready_[other]), g, other);
      return;
    }
    double weight = op.kind == OpKind::kReduce ? 1.0 : kCopyWeight;
    Stamp s = later(ready_[g], cpu_free_[r]);
    cpu_free_[r] = plus(plus(s, kReduceIndex, bytes * weight, p_.gamma), kBeyondCacheIndex,
                        bytes * weight * in_.beyond_cache, p_.delta);
    work_[r][kReduceIndex] += bytes * weight;
    work_[r][kBeyondCacheIndex] += bytes * weight * in_.beyond_cache;
    finish(g, cpu_free_[r]);
  }

  void transfer(int src, int dst, double bytes, const Stamp& both, size_t a, size_t b) {
    bool intra = in_.host_of.empty() || in_.host_of[src] == in_.host_of[dst];
    HopClass c = intra ? kIntra : kInter;
    if (!in_.cpu_driven) return portTransfer(src, dst, bytes, both, c, a, b);
    auto& src_free = cpu_free_[src];
    auto& dst_free = cpu_free_[dst];
    Stamp s = later(both, later(src_free, dst_free));
    double beyond = bytes * in_.beyond_cache;
    Stamp busy =
        plus(plus(s, byteIndex(c), bytes, p_.beta[c]), kBeyondCacheIndex, beyond, p_.delta);
    src_free = busy;
    dst_free = busy;
    for (int r : {src, dst}) {
      work_[r][byteIndex(c)] += bytes;
      work_[r][msgIndex(c)] += 1;
      work_[r][kBeyondCacheIndex] += beyond;
    }
    Stamp end = plus(busy, msgIndex(c), 1, p_.alpha[c]);
    finish(a, end);
    finish(b, end);
  }

  // A device fabric buffers in the network: the sender's port streams the message out when it is
  // free, the receiver's port takes it in when it is free (not before the first byte left).
  void portTransfer(int src, int dst, double bytes, const Stamp& both, HopClass c, size_t a,
                    size_t b) {
    Stamp out_start = later(both, out_free_[src]);
    Stamp out_end = plus(out_start, byteIndex(c), bytes, p_.beta[c]);
    out_free_[src] = out_end;
    Stamp in =
        later(plus(later(out_start, in_free_[dst]), byteIndex(c), bytes, p_.beta[c]), out_end);
    in_free_[dst] = in;
    Stamp end = plus(in, msgIndex(c), 1, p_.alpha[c]);
    finish(a, end);
    finish(b, end);
  }

  void finish(size_t g, const Stamp& s) {
    ++done_;
    end_ = later(end_, s);
    auto [r, i] = locate(g);
    const Schedule& sc = sched_[r];
    const Op& op = sc.ops[i];
    for (uint32_t k = 0; k < op.next_count; ++k) {
      size_t d = base_[r] + sc.dependents[op.next_begin + k];
      ready_[d] = later(ready_[d], s);
      if (--left_[d] == 0) queue_.emplace(ready_[d].t, d);
    }
  }

  const SimInput& in_;
  const Params& p_;
  std::vector<Schedule> sched_;
  std::vector<size_t> base_;
  std::vector<int> owner_;  // per op: its rank
  std::vector<Stamp> ready_;
  std::vector<uint32_t> left_;
  std::vector<Stamp> out_free_, in_free_, cpu_free_;
  std::vector<Counts> work_;  // per rank: what its CPU did
  std::unordered_map<uint64_t, size_t> waiting_;
  using Event = std::pair<double, size_t>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  size_t done_ = 0;
  Stamp end_;
};

}  // namespace

core::Result<SimResult> simulate(const SimInput& in, const Params& p) {
  if (!in.algo || in.ranks < 1)
    return Status(Code::kInvalidArgument, "simulate: no algorithm or no ranks");
  if (!in.host_of.empty() && static_cast<int>(in.host_of.size()) != in.ranks)
    return Status(Code::kInvalidArgument, "simulate: host_of must name every rank's host");
  if (!in.machine_of.empty() && static_cast<int>(in.machine_of.size()) != in.ranks)
    return Status(Code::kInvalidArgument, "simulate: machine_of must name every rank's machine");
  if (in.algo->collective == collectives::Collective::kAlltoallv)
    return Status(Code::kInvalidArgument, "simulate: all-to-allv needs its plan");
  return Simulation(in, p).run();
}

}  // namespace ccscope::model
