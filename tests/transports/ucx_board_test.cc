// The UCX transport's abort board: a peer's mark reaches the owner through another mapping of
// the same segment, once; a name that is not a board of this job maps nothing.
#include "transports/ucx/ucx_board.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace ccscope::transports::ucx {
namespace {

TEST(UcxAbortBoardTest, AMarkThroughAPeersMappingReachesTheOwnerOnce) {
  auto owner = AbortBoard::create(4);
  ASSERT_TRUE(owner.isOk()) << owner.status().toString();
  AbortBoard peer = AbortBoard::open(owner->name(), 4);
  ASSERT_TRUE(peer.mapped());
  EXPECT_TRUE(owner->newMarks().empty());
  peer.mark(2);
  EXPECT_EQ(owner->newMarks(), std::vector<int>{2});
  EXPECT_TRUE(owner->newMarks().empty());
  peer.mark(2);  // marked again: already reported
  peer.mark(3);
  EXPECT_EQ(owner->newMarks(), std::vector<int>{3});
  peer.mark(7);  // no such rank: ignored
  EXPECT_TRUE(owner->newMarks().empty());
}

TEST(UcxAbortBoardTest, OnlyABoardOfTheSameJobSizeUnderAnExistingNameMaps) {
  auto owner = AbortBoard::create(4);
  ASSERT_TRUE(owner.isOk()) << owner.status().toString();
  EXPECT_FALSE(AbortBoard::open(owner->name(), 5).mapped());
  EXPECT_FALSE(AbortBoard::open("/ccscope-ucxab-no-such-board", 4).mapped());
  EXPECT_FALSE(AbortBoard::open("", 4).mapped());
  owner->unlinkName();  // after connect: mapped boards stay, the name goes
  EXPECT_FALSE(AbortBoard::open(owner->name(), 4).mapped());
}

TEST(UcxAbortBoardTest, TheOwnersBoardLeavesNoNameBehind) {
  std::string name;
  {
    auto owner = AbortBoard::create(2);
    ASSERT_TRUE(owner.isOk()) << owner.status().toString();
    name = owner->name();
    AbortBoard moved = std::move(*owner);
    EXPECT_TRUE(AbortBoard::open(name, 2).mapped());
  }
  EXPECT_FALSE(AbortBoard::open(name, 2).mapped());
}

}  // namespace
}  // namespace ccscope::transports::ucx
