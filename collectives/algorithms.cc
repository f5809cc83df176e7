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

}  // namespace ccscope::collectives
