#include "bench/collective_desc.h"

namespace ccscope::bench {

using collectives::Collective;

namespace {
double allreduceFactor(int n) { return n > 0 ? 2.0 * (n - 1) / n : 0; }
double blockFactor(int n) { return n > 0 ? static_cast<double>(n - 1) / n : 0; }
double one(int) { return 1.0; }

const CollectiveDesc kDescs[] = {
    {Collective::kAllreduce, allreduceFactor, "bytes of each rank's input (= output)"},
    {Collective::kReduceScatter, blockFactor, "bytes of each rank's input (n blocks)"},
    {Collective::kAllgather, blockFactor, "bytes of each rank's output (n blocks)"},
    {Collective::kAlltoall, blockFactor, "bytes each rank sends (n blocks)"},
    {Collective::kAlltoallv, blockFactor, "largest per-rank send or receive volume"},
    {Collective::kBroadcast, one, "bytes broadcast"},
    {Collective::kSendrecv, one, "bytes each rank sends (and receives)"},
};
}  // namespace

const CollectiveDesc& describe(Collective c) {
  for (const CollectiveDesc& d : kDescs)
    if (d.collective == c) return d;
  return kDescs[0];
}

}  // namespace ccscope::bench
