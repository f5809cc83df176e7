// The shm transport's single-copy threshold: what the job asks for wins; otherwise 32 KiB with a
// core per local rank and 64 KiB with more local ranks than cores.
#include "transports/shm/single_copy.h"

#include <gtest/gtest.h>

#include <string>

namespace ccscope::transports::shm {
namespace {

TEST(SingleCopyThresholdTest, AskedSizeWinsOverEitherDefault) {
  for (bool oversubscribed : {false, true}) {
    SingleCopyThreshold t = singleCopyThreshold(16384, oversubscribed);
    EXPECT_EQ(t.from_bytes, 16384u);
    EXPECT_EQ(std::string(t.why), "CCSCOPE_SHM_SINGLE_COPY_FROM");
  }
}

TEST(SingleCopyThresholdTest, DefaultDependsOnWhetherRanksFitTheCores) {
  SingleCopyThreshold fit = singleCopyThreshold(0, false);
  EXPECT_EQ(fit.from_bytes, 32u * 1024);
  EXPECT_EQ(std::string(fit.why), "a core per local rank");
  SingleCopyThreshold over = singleCopyThreshold(0, true);
  EXPECT_EQ(over.from_bytes, 64u * 1024);
  EXPECT_EQ(std::string(over.why), "more local ranks than cores");
}

}  // namespace
}  // namespace ccscope::transports::shm
