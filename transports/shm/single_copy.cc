#include "transports/shm/single_copy.h"

namespace ccscope::transports::shm {

SingleCopyThreshold singleCopyThreshold(size_t asked, bool oversubscribed) {
  if (asked) return {asked, "CCSCOPE_SHM_SINGLE_COPY_FROM"};
  if (oversubscribed) return {kSingleCopyFromOversubscribed, "more local ranks than cores"};
  return {kSingleCopyFromCorePerRank, "a core per local rank"};
}

}  // namespace ccscope::transports::shm
