// The shm segment's pages are mapped on the setup path (ShmTransport::connect): the owner's
// whole segment, and a sender's own ring in a peer's segment. Measured through the mapping's Rss
// in /proc/self/smaps (pages mapped into this process), so it holds for this process's page
// tables, not just for the shared file.
#include "transports/shm/shm_segment.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "core/host_memory.h"

namespace ccscope::transports::shm {
namespace {

TEST(ShmSegmentTest, SetupMapsThePagesTheFirstMessagesWouldFaultIn) {
  constexpr int kRanks = 4;
  const std::string name = "/ccscope-segtest-" + std::to_string(getpid());
  auto own = Segment::create(name, kRanks);
  ASSERT_TRUE(own.isOk()) << own.status().toString();
  const size_t len = segmentBytes(kRanks);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  ASSERT_TRUE(prefaultFits(kRanks)) << "/dev/shm has less than 17 MiB free";
  EXPECT_LT(core::smapsBytes(own->header(), len, "Rss"), sizeof(Ring) / 2);
  if (!own->prefault() && errno == EINVAL) GTEST_SKIP() << "no MADV_POPULATE_WRITE (Linux < 5.14)";
  EXPECT_GE(core::smapsBytes(own->header(), len, "Rss"), len / page * page)
      << "the owner reads every ring: all of its segment is mapped";

  // A second mapping of the same segment, as a peer process opens it: nothing mapped yet, then
  // only the ring this "rank" writes into.
  auto peer = Segment::open(name, kRanks);
  ASSERT_TRUE(peer.isOk()) << peer.status().toString();
  own->unlinkName();
  // (Reading the header maps its neighbours too: the kernel's fault-around, 64 KiB.)
  EXPECT_LT(core::smapsBytes(peer->header(), len, "Rss"), sizeof(Ring) / 2);
  ASSERT_TRUE(peer->prefault(2));
  const size_t rss = core::smapsBytes(peer->header(), len, "Rss");
  EXPECT_GE(rss, sizeof(Ring) / page * page);
  EXPECT_LT(rss, sizeof(Ring) + sizeof(Ring) / 2) << "the other rings stay unmapped here";
}

TEST(ShmSegmentTest, SegmentsThatWouldFillDevShmAreNotMappedAhead) {
  EXPECT_TRUE(prefaultFits(2));
  EXPECT_FALSE(prefaultFits(4096)) << "4096 segments of 2 GiB each";
}

TEST(SmapsBytesTest, NothingMappedThereIsZero) {
  int on_stack = 0;
  EXPECT_GT(core::smapsBytes(&on_stack, sizeof on_stack, "Rss"), 0u);
  EXPECT_EQ(core::smapsBytes(nullptr, 4096, "Rss"), 0u);
  EXPECT_EQ(core::smapsBytes(&on_stack, sizeof on_stack, "NoSuchField"), 0u);
}

}  // namespace
}  // namespace ccscope::transports::shm
