// The UCX transport's abort board: a peer's mark reaches the owner through another mapping of
// the same segment, once, even past an entry a dead marker claimed; a name that is not a board
// maps nothing; a full board drops marks.
#include "transports/ucx/ucx_board.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <utility>
#include <vector>

namespace ccscope::transports::ucx {
namespace {

std::string testName(const char* what) {
  return fmt::format("/ccscope-ucxab-test-{}-{}", getpid(), what);
}

TEST(UcxAbortBoardTest, AMarkThroughAPeersMappingReachesTheOwnerOnce) {
  auto owner = AbortBoard::create(testName("once"), 4);
  ASSERT_TRUE(owner.isOk()) << owner.status().toString();
  AbortBoard peer = AbortBoard::open(owner->name());
  ASSERT_TRUE(peer.mapped());
  EXPECT_TRUE(owner->newMarks().empty());
  EXPECT_TRUE(peer.mark(2));
  EXPECT_EQ(owner->newMarks(), std::vector<int>{2});
  EXPECT_TRUE(owner->newMarks().empty());
  peer.mark(2);  // marked again: already reported
  peer.mark(3);
  EXPECT_EQ(owner->newMarks(), std::vector<int>{3});
  peer.mark(7);  // no such rank in a job of 4: never reported
  EXPECT_TRUE(owner->newMarks().empty());
}

TEST(UcxAbortBoardTest, AFullBoardDropsMarksAndKeepsTheOnesItHolds) {
  auto owner = AbortBoard::create(testName("full"), 2);
  ASSERT_TRUE(owner.isOk()) << owner.status().toString();
  AbortBoard peer = AbortBoard::open(owner->name());
  ASSERT_TRUE(peer.mapped());
  EXPECT_TRUE(peer.mark(1));
  for (uint32_t i = 1; i < kBoardEntries; ++i) peer.mark(0);
  EXPECT_FALSE(peer.mark(1));
  EXPECT_EQ(owner->newMarks(), (std::vector<int>{1, 0}));
}

TEST(UcxAbortBoardTest, AMarkerThatDiedAfterClaimingHidesNoLaterMark) {
  auto owner = AbortBoard::create(testName("claimed"), 4);
  ASSERT_TRUE(owner.isOk()) << owner.status().toString();
  int fd = shm_open(owner->name().c_str(), O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  void* p = mmap(nullptr, sizeof(BoardHeader), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(p, MAP_FAILED);
  // A marker claims entry 0 and dies before writing its rank there.
  std::atomic_ref<uint32_t>(static_cast<BoardHeader*>(p)->marks).fetch_add(1);
  munmap(p, sizeof(BoardHeader));
  AbortBoard peer = AbortBoard::open(owner->name());
  ASSERT_TRUE(peer.mapped());
  EXPECT_TRUE(peer.mark(3));
  EXPECT_EQ(owner->newMarks(), std::vector<int>{3});
  EXPECT_TRUE(peer.mark(1));
  EXPECT_EQ(owner->newMarks(), std::vector<int>{1});
  EXPECT_TRUE(owner->newMarks().empty());
}

TEST(UcxAbortBoardTest, OnlyABoardUnderAnExistingNameMaps) {
  auto owner = AbortBoard::create(testName("exists"), 4);
  ASSERT_TRUE(owner.isOk()) << owner.status().toString();
  EXPECT_FALSE(AbortBoard::open(testName("missing")).mapped());
  EXPECT_FALSE(AbortBoard::open("").mapped());
  owner->unlinkName();  // after connect: mapped boards stay, the name goes
  EXPECT_FALSE(AbortBoard::open(owner->name()).mapped());
}

TEST(UcxAbortBoardTest, TheOwnersBoardReplacesAStaleOneAndLeavesNoNameBehind) {
  const std::string name = testName("stale");
  auto stale = AbortBoard::create(name, 2);
  ASSERT_TRUE(stale.isOk()) << stale.status().toString();
  AbortBoard(AbortBoard::open(name)).mark(1);
  {
    auto owner = AbortBoard::create(name, 2);  // the same job's name: a killed run's board
    ASSERT_TRUE(owner.isOk()) << owner.status().toString();
    EXPECT_TRUE(owner->newMarks().empty());
    AbortBoard moved = std::move(*owner);
    EXPECT_TRUE(AbortBoard::open(name).mapped());
  }
  EXPECT_FALSE(AbortBoard::open(name).mapped());
}

}  // namespace
}  // namespace ccscope::transports::ucx
