#include "launch/environment.h"

#include <gtest/gtest.h>

namespace ccscope::launch {
namespace {

TEST(EnvironmentTest, NoLauncherMeansSingleProcess) {
  auto info = detectLaunch({}, {});
  ASSERT_TRUE(info.isOk());
  EXPECT_EQ(info->source, LaunchSource::kNone);
}

TEST(EnvironmentTest, OpenMpiRankWithoutStoreLearnsItThroughMpi) {
  auto info = detectLaunch({{"OMPI_COMM_WORLD_RANK", "3"},
                            {"OMPI_COMM_WORLD_SIZE", "4"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}},
                           {});
  ASSERT_TRUE(info.isOk());
  EXPECT_EQ(info->source, LaunchSource::kOpenMpi);
  EXPECT_EQ(info->rank, 3);
  EXPECT_EQ(info->size, 4);
  EXPECT_EQ(info->local_rank, 1);
  EXPECT_TRUE(info->store.empty());
  EXPECT_TRUE(info->token.empty());
}

TEST(EnvironmentTest, TorchrunStyle) {
  auto info = detectLaunch({{"RANK", "1"},
                            {"WORLD_SIZE", "2"},
                            {"MASTER_ADDR", "10.1.2.3"},
                            {"MASTER_PORT", "29501"},
                            {"CCSCOPE_JOB_TOKEN", "s3cret"}},
                           {});
  ASSERT_TRUE(info.isOk());
  EXPECT_EQ(info->source, LaunchSource::kTorchrun);
  EXPECT_EQ(info->store, "10.1.2.3:29501");
  EXPECT_EQ(info->token, "s3cret");
  EXPECT_FALSE(info->token_is_weak);
}

TEST(EnvironmentTest, SlurmStepUsesFirstNodeAndAJobDerivedPort) {
  auto info = detectLaunch({{"SLURM_PROCID", "5"},
                            {"SLURM_STEP_NUM_TASKS", "8"},
                            {"SLURM_JOB_ID", "1234"},
                            {"SLURM_STEP_NODELIST", "gpu[07-08]"}},
                           {});
  ASSERT_TRUE(info.isOk());
  EXPECT_EQ(info->source, LaunchSource::kSlurm);
  EXPECT_EQ(info->store, "gpu07:21234");
  EXPECT_TRUE(info->token_is_weak);
}

TEST(EnvironmentTest, OverridesWin) {
  auto info = detectLaunch({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, {"h:1", -1});
  ASSERT_TRUE(info.isOk());
  EXPECT_EQ(info->store, "h:1");
}

TEST(EnvironmentTest, BadValuesAreUsageErrors) {
  auto a = detectLaunch({{"RANK", "4"}, {"WORLD_SIZE", "4"}}, {});
  ASSERT_FALSE(a.isOk());
  EXPECT_EQ(a.status().code(), core::Code::kInvalidArgument);
  EXPECT_FALSE(detectLaunch({{"RANK", "x"}, {"WORLD_SIZE", "4"}}, {}).isOk());
}

TEST(EnvironmentTest, SlurmNodeLists) {
  EXPECT_EQ(firstSlurmHost("node01"), "node01");
  EXPECT_EQ(firstSlurmHost("a,b"), "a");
  EXPECT_EQ(firstSlurmHost("node[03-05,7],gpu1"), "node03");
  EXPECT_EQ(generateJobToken().size(), 32u);
  EXPECT_NE(generateJobToken(), generateJobToken());
}

}  // namespace
}  // namespace ccscope::launch
