// The algorithm registry: every hand-written algorithm is a pure schedule builder plus its
// alpha-beta-gamma cost, listed once here so the harness, `--algo all` and `--algo auto` see the
// same set. Adding an algorithm = one schedule file + one registry row.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collective.h"
#include "collectives/schedule.h"

namespace ccscope::collectives {

struct ScheduleParams {
  Collective collective = Collective::kAllreduce;
  int rank = 0;
  int ranks = 1;
  uint64_t count = 0;          // the collective's count (see collective.h), already rounded
  uint64_t segment_elems = 1;  // pipeline segment
  bool avg = false;            // reductions: scale by 1/ranks at the end
  int root = 0;                // broadcast
  const AlltoallvPlan* plan = nullptr;
};

// Hockney-style costs of one message of b bytes = alpha + beta*b; reducing b bytes = gamma*b.
struct CostParams {
  double alpha = 5e-6;   // s per message
  double beta = 1e-9;    // s per byte moved
  double gamma = 2e-10;  // s per byte reduced
};

struct AlgorithmInfo {
  const char* name;
  Collective collective;
  Schedule (*build)(const ScheduleParams&);
  // Predicted seconds for `bytes` (the collective's size) on `ranks` ranks.
  double (*cost)(int ranks, double bytes, const CostParams&);
  const char* summary;  // one line for docs and --help
};

std::span<const AlgorithmInfo> allAlgorithms();
const AlgorithmInfo* findAlgorithm(Collective c, std::string_view name);
std::vector<std::string> algorithmNames(Collective c);

// The pipeline segment a schedule runs with when none is asked for: half a chunk (two segments
// already overlap reduction with transfer), at least the transport's minimum, doubled where
// ranks outnumber cores (each message costs a wakeup there), at most 1 MiB unless the minimum
// is larger. ScheduleBackend and the model's replay both use it.
size_t defaultSegmentBytes(size_t chunk_bytes, size_t min_segment_bytes, bool oversubscribed);

// The segment from a transport's measured costs (device buffers, where a message may cost tens
// of microseconds and a copy moves hundreds of GB/s): cutting a chunk of C bytes into segments
// of s costs C/s messages of alpha, and the last segment's transfer or reduction, s bytes at the
// slower of beta and gamma, is not overlapped; their sum is least at s = sqrt(C alpha / that).
// At least the transport's minimum, at most the chunk.
size_t measuredSegmentBytes(size_t chunk_bytes, const CostParams& cost, size_t min_segment_bytes);

}  // namespace ccscope::collectives
