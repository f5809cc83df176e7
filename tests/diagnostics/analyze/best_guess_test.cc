// The best-guess stage (cue_tracker.cc) through the whole analyzer: lines no rule knows, written
// here for each mechanism (the failure lines' vocabulary, a wrapper and its detail, where the
// failure sits, the phase), so that a rule added later for one of them does not hide the stage:
// each line's wording is invented, not taken from a real log.
#include <gtest/gtest.h>

#include "tests/diagnostics/analyze/test_util.h"

namespace ccscope::diagnostics {
namespace {

using core::Layer;
using testing::analyzeMemory;

TEST(BestGuessTest, TheFailureLinesVocabularyNamesTheLayer) {
  auto d = analyzeMemory(
      {{"r0.log",
        {"worker 3 starting", "zork: failed to open socket on iface foo7", "zork: giving up"}}});
  EXPECT_TRUE(d.conclusive);
  EXPECT_EQ(d.layer, Layer::kHostNetwork) << d.verdict;
  EXPECT_EQ(d.confidence, "low");
  ASSERT_FALSE(d.evidence.empty());
  EXPECT_EQ(d.evidence.front().line, 2);
}

TEST(BestGuessTest, TheDetailUnderAWrapperOutweighsTheWrapper) {
  auto d = analyzeMemory({{"r0.log",
                           {"zork: collective failed: nccl internal error",
                            "zork: Last error: mlx5 port went down while posting"}}});
  EXPECT_EQ(d.layer, Layer::kRdma) << d.verdict;
}

TEST(BestGuessTest, ATracebackThroughTheProgramsOwnFilesIsTheApplication) {
  auto d = analyzeMemory({{"r0.log",
                           {"Traceback (most recent call last):",
                            "  File \"/home/me/proj/train_zork.py\", line 12, in <module>",
                            "  File \"/usr/lib/python3/site-packages/zork/core.py\", line 9, in f",
                            "ZorkFailure: the widget failed"}}});
  EXPECT_EQ(d.layer, Layer::kApplication) << d.verdict;
}

TEST(BestGuessTest, ANativeCrashNamingNoLayerIsTheLibraryItRanIn) {
  auto d = analyzeMemory({{"r0.log",
                           {"zork starting",
                            "./run_zork.sh: line 4: 1234 Segmentation "
                            "fault      ./zork"}}});
  EXPECT_EQ(d.layer, Layer::kLibrary) << d.verdict;
}

// Stopped at the start with no rendezvous words: hosts that cannot reach each other.
TEST(BestGuessTest, AWordlessFailureIsTheNetworkOrTheRanksByThePhase) {
  auto early = analyzeMemory({{"r0.log", {"zork: it failed"}}});
  EXPECT_EQ(early.layer, Layer::kHostNetwork) << early.verdict;
  auto late = analyzeMemory({{"r0.log", {"epoch 3 done", "zork: it failed"}}});
  EXPECT_EQ(late.layer, Layer::kApplication) << late.verdict;
}

TEST(BestGuessTest, NoFailureLineIsNothingConclusive) {
  auto d = analyzeMemory(
      {{"r0.log", {"zork starting", "TORCH_NCCL_ASYNC_ERROR_HANDLING=1", "success on the gpu"}}});
  EXPECT_FALSE(d.conclusive) << d.verdict;
  EXPECT_EQ(d.confidence, "none");
}

// A severity word in a line printed at an informational level is the program's own narration:
// an optional thing looked for and not found is no failure.
TEST(BestGuessTest, AnInfoLevelProbeIsNoFailure) {
  auto d = analyzeMemory({{"r0.log",
                           {"zork INFO could not find the optional widget plugin",
                            "[DEBUG] retrying failed lookup of zork.conf",
                            "zork INFO no such file libzork-net.so, using the socket"}}});
  EXPECT_FALSE(d.conclusive) << d.verdict;
}

// An informational line that failed is the only failure there is: it decides, and it is not
// counted when a failure of its own level exists.
TEST(BestGuessTest, AnInfoLevelFailureDecidesOnlyAlone) {
  auto alone = analyzeMemory(
      {{"r0.log", {"zork INFO call to connect returned connection refused, retrying"}}});
  EXPECT_TRUE(alone.conclusive);
  EXPECT_EQ(alone.layer, Layer::kHostNetwork) << alone.verdict;
  auto beside = analyzeMemory({{"r0.log",
                                {"zork INFO call to connect returned connection refused, retrying",
                                 "zork: fatal: the mlx5 port went down"}}});
  EXPECT_EQ(beside.layer, Layer::kRdma) << beside.verdict;
}

// A warning the program goes on after is narration, not the failure.
TEST(BestGuessTest, AWarningTheProgramGoesOnAfterIsNotTheFailure) {
  auto on = analyzeMemory(
      {{"r0.log", {"zork WARNING: unable to read the hostfile, will proceed on this node only"}}});
  EXPECT_FALSE(on.conclusive) << on.verdict;
  auto beside =
      analyzeMemory({{"r0.log",
                      {"zork WARNING: unable to read the hostfile, will proceed on this node only",
                       "zork: fatal: the mlx5 port went down"}}});
  EXPECT_EQ(beside.layer, Layer::kRdma) << beside.verdict;
}

// Words inside paths and identifiers name the component that failed, and count only when the
// failure lines' own words name no layer.
TEST(BestGuessTest, PathsAndIdentifiersNameTheComponentOnlyAsAFallback) {
  auto path =
      analyzeMemory({{"r0.log", {"zork fatal: nothing under /sys/class/infiniband/*/ports"}}});
  EXPECT_EQ(path.layer, Layer::kRdma) << path.verdict;
  auto ident = analyzeMemory({{"r0.log", {"zork fatal in zork_pmix_fence(): gave up"}}});
  EXPECT_EQ(ident.layer, Layer::kBootstrap) << ident.verdict;
  auto words =
      analyzeMemory({{"r0.log", {"zork: socket write failed in src/uct/ib/rc/zork_verbs.c:12"}}});
  EXPECT_EQ(words.layer, Layer::kHostNetwork) << words.verdict;
}

TEST(BestGuessTest, EvidenceIsValidUtf8AndCut) {
  std::string line = "zork: socket failed \xff\xfe ";
  line += std::string(2000, 'x');
  auto d = analyzeMemory({{"r0.log", {line}}});
  ASSERT_EQ(d.evidence.size(), 1u);
  EXPECT_LE(d.evidence.front().text.size(), 520u);
  EXPECT_EQ(d.evidence.front().text.find('\xff'), std::string::npos);
}

// A message every rank repeats counts a few times, not once per rank: one line of another
// layer's strong vocabulary still decides.
TEST(BestGuessTest, ARepeatedMessageDoesNotOutvoteEverythingElse) {
  std::vector<std::string> lines(64, "zork: error in the network stack");
  lines.push_back("zork: fatal: the ibv_ queue pair went into error");
  auto d = analyzeMemory({{"r0.log", lines}});
  EXPECT_EQ(d.layer, Layer::kRdma) << d.verdict;
}

}  // namespace
}  // namespace ccscope::diagnostics
