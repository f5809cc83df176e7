#include "core/affinity.h"

#include <gtest/gtest.h>
#include <sched.h>

namespace ccscope::core {
namespace {

TEST(AffinityTest, LocalRanksTakeTheAllowedCpusRoundRobin) {
  const std::vector<int> two{0, 1}, odd{2, 5, 7};
  EXPECT_EQ(cpuForLocalRank(two, 0), 0);
  EXPECT_EQ(cpuForLocalRank(two, 1), 1);
  EXPECT_EQ(cpuForLocalRank(two, 2), 0);  // more ranks than cores: 0 and 2 share CPU 0
  EXPECT_EQ(cpuForLocalRank(two, 7), 1);
  EXPECT_EQ(cpuForLocalRank(odd, 0), 2);  // the allowed set, not CPU numbers from 0
  EXPECT_EQ(cpuForLocalRank(odd, 4), 5);
  EXPECT_EQ(cpuForLocalRank(odd, 8), 7);
}

TEST(AffinityTest, PinningLeavesOneAllowedCpu) {
  auto before = allowedCpus();
  ASSERT_TRUE(before.isOk()) << before.status().toString();
  ASSERT_FALSE(before->empty());
  const int cpu = before->back();
  ASSERT_TRUE(pinToCpu(cpu).isOk());
  auto after = allowedCpus();
  ASSERT_TRUE(after.isOk());
  EXPECT_EQ(*after, std::vector<int>{cpu});
  EXPECT_EQ(sched_getcpu(), cpu);
  cpu_set_t all;  // put the test thread back
  CPU_ZERO(&all);
  for (int c : *before) CPU_SET(c, &all);
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
  EXPECT_FALSE(pinToCpu(CPU_SETSIZE - 1).isOk());  // no such CPU here: an error, not a no-op
}

}  // namespace
}  // namespace ccscope::core
