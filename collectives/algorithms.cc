#include "collectives/algorithms.h"

#include <algorithm>
#include <cmath>

namespace ccscope::collectives {

// Each collective's algorithms are listed next to their schedules (<collective>_algorithms.cc).
std::span<const AlgorithmInfo> allreduceAlgorithms();
std::span<const AlgorithmInfo> movementAlgorithms();

std::span<const AlgorithmInfo> allAlgorithms() {
  static const std::vector<AlgorithmInfo> all = [] {
    std::vector<AlgorithmInfo> v;
    for (auto part : {allreduceAlgorithms(), movementAlgorithms()})
      v.insert(v.end(), part.begin(), part.end());
    return v;
  }();
  return all;
}

const AlgorithmInfo* findAlgorithm(Collective c, std::string_view name) {
  for (const AlgorithmInfo& a : allAlgorithms())
    if (a.collective == c && name == a.name) return &a;
  return nullptr;
}

std::vector<std::string> algorithmNames(Collective c) {
  std::vector<std::string> out;
  for (const AlgorithmInfo& a : allAlgorithms())
    if (a.collective == c) out.push_back(a.name);
  return out;
}

size_t defaultSegmentBytes(size_t chunk_bytes, size_t min_segment_bytes, bool oversubscribed) {
  constexpr size_t kMaxSegmentBytes = 1 << 20;
  size_t min_seg = min_segment_bytes * (oversubscribed ? 2 : 1);
  return std::clamp(chunk_bytes / 2, min_seg, std::max(min_seg, kMaxSegmentBytes));
}

size_t measuredSegmentBytes(size_t chunk_bytes, const CostParams& cost, size_t min_segment_bytes) {
  const double per_byte = std::max({cost.beta, cost.gamma, 1e-15});
  const double best =
      std::sqrt(static_cast<double>(chunk_bytes) * std::max(cost.alpha, 0.0) / per_byte);
  const size_t lo = std::min(min_segment_bytes, std::max<size_t>(chunk_bytes, 1));
  const size_t seg = std::clamp(static_cast<size_t>(best), lo, std::max<size_t>(chunk_bytes, lo));
  // Equal segments: the count the rule implies, none of them a short remainder.
  const size_t parts = std::max<size_t>(
      1, static_cast<size_t>(std::llround(static_cast<double>(chunk_bytes) / seg)));
  return std::max(lo, (chunk_bytes + parts - 1) / parts);
}

}  // namespace ccscope::collectives
