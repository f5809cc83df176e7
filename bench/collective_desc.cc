#include "bench/collective_desc.h"

#include "bench/check_data.h"

namespace ccscope::bench {

namespace {
double allreduceFactor(int n) { return n > 0 ? 2.0 * (n - 1) / n : 0; }

const CollectiveDesc kAllreduce{collectives::Collective::kAllreduce, allreduceFactor,
                                fillAllreduceInput, countAllreduceWrong};
}  // namespace

const CollectiveDesc& describe(collectives::Collective) { return kAllreduce; }

}  // namespace ccscope::bench
