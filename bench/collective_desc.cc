#include "bench/collective_desc.h"

namespace ccscope::bench {

using collectives::Collective;

namespace {
const CollectiveDesc kDescs[] = {
    {Collective::kAllreduce, "bytes of each rank's input (= output)"},
    {Collective::kReduceScatter, "bytes of each rank's input (n blocks)"},
    {Collective::kAllgather, "bytes of each rank's output (n blocks)"},
    {Collective::kAlltoall, "bytes each rank sends (n blocks)"},
    {Collective::kAlltoallv, "largest per-rank send or receive volume"},
    {Collective::kBroadcast, "bytes broadcast"},
    {Collective::kSendrecv, "bytes each rank sends (and receives)"},
};
}  // namespace

const CollectiveDesc& describe(Collective c) {
  for (const CollectiveDesc& d : kDescs)
    if (d.collective == c) return d;
  return kDescs[0];
}

}  // namespace ccscope::bench
