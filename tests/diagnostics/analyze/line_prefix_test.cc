#include "diagnostics/analyze/line_prefix.h"

#include <gtest/gtest.h>

#include "diagnostics/analyze/input_paths.h"
#include "diagnostics/analyze/keyword_index.h"

namespace ccscope::diagnostics {
namespace {

struct PrefixCase {
  const char* raw;
  const char* body;
  int rank;
  const char* host;
  bool has_time;
};

class LinePrefixTest : public ::testing::TestWithParam<PrefixCase> {};

TEST_P(LinePrefixTest, StripsPrefixAndKeepsWhatItSays) {
  const auto& c = GetParam();
  const LineContext ctx = parseLinePrefix(c.raw);
  EXPECT_EQ(ctx.body, c.body);
  EXPECT_EQ(ctx.rank, c.rank);
  EXPECT_EQ(ctx.host, c.host);
  EXPECT_EQ(ctx.has_time, c.has_time);
}

INSTANTIATE_TEST_SUITE_P(
    Launchers, LinePrefixTest,
    ::testing::Values(
        PrefixCase{"[1,3]<stdout>:gpu7:11:22 [3] NCCL WARN x", "gpu7:11:22 [3] NCCL WARN x", 3,
                   "gpu7", false},
        PrefixCase{"12: NCCL INFO y", "NCCL INFO y", 12, "", false},
        PrefixCase{"[rank5]:[E ProcessGroupNCCL.cpp:1] z", "[E ProcessGroupNCCL.cpp:1] z", 5, "",
                   false},
        PrefixCase{"[default2]:hello", "hello", 2, "", false},
        PrefixCase{"rank_604.node9.log:boom", "boom", 604, "", false},
        PrefixCase{"[2024-03-01 10:00:00] h1:1:2 [0] NCCL INFO a", "h1:1:2 [0] NCCL INFO a", -1,
                   "h1", true},
        PrefixCase{"2024-03-01T10:00:00.123Z [1,0]<stderr>:x", "x", 0, "", true},
        PrefixCase{"[ 1234.567890] NVRM: Xid", "NVRM: Xid", -1, "", false},
        PrefixCase{"Mar  1 10:00:00 node4 kernel: NVRM: Xid", "NVRM: Xid", -1, "node4", false},
        PrefixCase{"I0301 10:00:00.123456  4242 train.cc:12] msg", "msg", -1, "", false},
        PrefixCase{"[P2P (Peer-to-Peer) GPU Test]", "[P2P (Peer-to-Peer) GPU Test]", -1, "", false},
        // UCX's header (padded pid) and nccl-tests' failure lines name the host.
        PrefixCase{"[1618778295.702469] [node7:22469:0]  address.c:917 UCX  ERROR x",
                   "[node7:22469:0]  address.c:917 UCX  ERROR x", -1, "node7", false},
        PrefixCase{"[8d6b-f9:3039 :0:3095] Caught signal 7",
                   "[8d6b-f9:3039 :0:3095] Caught signal 7", -1, "8d6b-f9", false},
        PrefixCase{"gpu3: Test CUDA failure common.cu:941 'x'",
                   "gpu3: Test CUDA failure common.cu:941 'x'", -1, "gpu3", false},
        PrefixCase{".. gpu3 pid 411: Test failure common.cu:381",
                   ".. gpu3 pid 411: Test failure common.cu:381", -1, "gpu3", false},
        PrefixCase{"note: Test passed", "note: Test passed", -1, "", false},
        PrefixCase{"[10:00:05] loss 0.3", "[10:00:05] loss 0.3", -1, "", false},
        PrefixCase{".. some text pid 3", ".. some text pid 3", -1, "", false}));

TEST(LinePrefixTimeTest, LaterTimestampsCompareLater) {
  const auto a = parseLinePrefix("2024-03-01 10:00:00,5 x");
  const auto b = parseLinePrefix("[2024-03-01T10:00:01] y");
  ASSERT_TRUE(a.has_time && b.has_time);
  EXPECT_LT(a.time, b.time);
  EXPECT_NEAR(b.time - a.time, 0.5, 1e-6);
}

TEST(InputPathsTest, RankFromFileName) {
  EXPECT_EQ(rankFromFileName("/logs/rank_12.log"), 12);
  EXPECT_EQ(rankFromFileName("worker-3.out"), 3);
  EXPECT_EQ(rankFromFileName("Rank7.host.txt"), 7);
  EXPECT_EQ(rankFromFileName("/tmp/ccscope-nccl-r3-4121.log"), 3);
  EXPECT_EQ(rankFromFileName("ccscope-flight-r12-node1-99.json"), 12);
  EXPECT_EQ(rankFromFileName("ccscope-run-report.log"), -1);
  EXPECT_EQ(rankFromFileName("dmesg.txt"), -1);
}

TEST(InputPathsTest, MissingPathIsBadInput) {
  auto r = expandInputs({"/nonexistent/ccscope/x.log"});
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), core::Code::kInvalidArgument);
  EXPECT_FALSE(expandInputs({"/nonexistent/ccscope/*.log"}).isOk());
}

TEST(KeywordIndexTest, FindsOverlappingKeywordsIgnoringCase) {
  KeywordIndex idx;
  idx.add("retry counter", 0);
  idx.add("counter exceeded", 1);
  idx.add("NET/IB", 2);
  idx.build();
  std::vector<int> tags;
  idx.find("net/ib: transport RETRY COUNTER EXCEEDED", tags);
  std::sort(tags.begin(), tags.end());
  EXPECT_EQ(tags, (std::vector<int>{0, 1, 2}));
  tags.clear();
  idx.find("nothing here", tags);
  EXPECT_TRUE(tags.empty());
}

}  // namespace
}  // namespace ccscope::diagnostics
