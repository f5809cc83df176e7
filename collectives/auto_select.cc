#include "collectives/auto_select.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "collectives/reduce_kernels.h"
#include "collectives/schedule_backend.h"

namespace ccscope::collectives {

using core::Status;

namespace {

constexpr size_t kLargeBytes = 1 << 20;
constexpr int kSmallRounds = 200, kLargeRounds = 8;
constexpr uint32_t kTagCalib = 0xCA11B;

// Time per round of "send to the right, receive from the left" with `bytes` each way.
core::Result<double> shiftSeconds(transports::Transport& t, const transports::MemoryRegion& mr,
                                  size_t bytes, int rounds, core::Deadline d) {
  int n = t.size(), right = (t.rank() + 1) % n, left = (t.rank() + n - 1) % n;
  int64_t t0 = core::nowNs();
  for (int i = 0; i < rounds; ++i) {
    CCSCOPE_ASSIGN_OR_RETURN(auto r, t.postRecv(left, kTagCalib, mr, kLargeBytes, bytes));
    CCSCOPE_ASSIGN_OR_RETURN(auto s, t.postSend(right, kTagCalib, mr, 0, bytes));
    CCSCOPE_RETURN_IF_ERROR(t.wait(s, d));
    CCSCOPE_RETURN_IF_ERROR(t.wait(r, d));
  }
  return (core::nowNs() - t0) / 1e9 / rounds;
}

}  // namespace

core::Result<Calibration> calibrate(transports::Transport& t,
                                    const std::function<Status(std::span<double>)>& max_over_ranks,
                                    core::Deadline d) {
  int64_t start = core::nowNs();
  Calibration c;
  if (t.size() > 1) {
    HostBuffer buf(2 * kLargeBytes);
    CCSCOPE_ASSIGN_OR_RETURN(auto mr, t.registerMemory(buf.data(), buf.size()));
    CCSCOPE_RETURN_IF_ERROR(shiftSeconds(t, mr, 8, 20, d).status());  // warm-up
    CCSCOPE_ASSIGN_OR_RETURN(double small, shiftSeconds(t, mr, 8, kSmallRounds, d));
    CCSCOPE_ASSIGN_OR_RETURN(double large, shiftSeconds(t, mr, kLargeBytes, kLargeRounds, d));
    // gamma: this core reducing floats out of cache-cold-ish buffers.
    auto sum = reduceKernel(core::DataType::kFloat, core::ReduceOp::kSum);
    int64_t g0 = core::nowNs();
    for (int i = 0; i < kLargeRounds; ++i) sum(buf.data(), buf.data(), buf.data() + kLargeBytes, kLargeBytes / 4);
    double gamma = (core::nowNs() - g0) / 1e9 / kLargeRounds / kLargeBytes;
    double v[3] = {small, large, gamma};
    CCSCOPE_RETURN_IF_ERROR(max_over_ranks(v));
    c.cost.alpha = v[0];
    c.cost.beta = std::max(1e-12, (v[1] - v[0]) / kLargeBytes);
    c.cost.gamma = v[2];
  }
  c.seconds = (core::nowNs() - start) / 1e9;
  return c;
}

Choice choose(Collective c, int ranks, double bytes, const CostParams& cost) {
  Choice ch;
  for (const AlgorithmInfo& a : allAlgorithms())
    if (a.collective == c) ch.predicted_s.emplace_back(a.name, a.cost(ranks, bytes, cost));
  std::stable_sort(ch.predicted_s.begin(), ch.predicted_s.end(),
                   [](auto& x, auto& y) { return x.second < y.second; });
  if (!ch.predicted_s.empty()) ch.algo = findAlgorithm(c, ch.predicted_s.front().first);
  return ch;
}

std::string Choice::explain() const {
  std::string out;
  for (const auto& [name, s] : predicted_s)
    out += fmt::format("{}{} {:.1f} us", out.empty() ? "" : " < ", name, s * 1e6);
  return out;
}

}  // namespace ccscope::collectives
