#include "core/host_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace ccscope::core {
namespace {

constexpr size_t kMiB = 1u << 20;

// The kernel's THP mode, the bracketed word of .../transparent_hugepage/enabled ("" if unknown).
std::string thpMode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(f, line);
  auto open = line.find('['), close = line.find(']');
  return open == std::string::npos || close == std::string::npos
             ? ""
             : line.substr(open + 1, close - open - 1);
}

TEST(HostBufferTest, IsZeroedAndAlignedToTheHugePageWhenAskedForOne) {
  HostBuffer b(5 * kMiB + 123, HostPages::kHuge);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), 5 * kMiB + 123);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % HostBuffer::kHugePageBytes, 0u);
  for (size_t i = 0; i < b.size(); i += 4093) ASSERT_EQ(b.data()[i], 0) << i;
  b.data()[b.size() - 1] = 7;  // the last byte is writable
}

TEST(HostBufferTest, SmallBuffersAndBasePagesArePageAligned) {
  HostBuffer small(4096, HostPages::kHuge), base(3 * kMiB, HostPages::kBase);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % 4096, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base.data()) % 4096, 0u);
  EXPECT_EQ(HostBuffer(0).data(), nullptr);
}

TEST(HostBufferTest, MovedBufferKeepsItsMemoryAndTheSourceIsEmpty) {
  HostBuffer a(3 * kMiB, HostPages::kHuge);
  char* p = a.data();
  HostBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from state is defined
  HostBuffer c;
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 3 * kMiB);
}

TEST(HostBufferTest, HugePagesAreGrantedWhereTheKernelOffersThemOnRequest) {
  std::string mode = thpMode();
  if (mode != "madvise" && mode != "always") GTEST_SKIP() << "THP is '" << mode << "' here";
  HostBuffer b(8 * kMiB, HostPages::kHuge);
  // Compaction may leave a page or two on base pages under memory pressure; most must be huge.
  EXPECT_GE(b.hugeBytes(), 4 * kMiB);
  EXPECT_EQ(hugePageShortfall({&b}, HostPages::kBase), "");
}

TEST(HostBufferTest, ShortfallNamesWhatWasReceivedAndTheKernelSetting) {
  if (thpMode() != "madvise") GTEST_SKIP() << "needs THP 'madvise' (base pages unless asked)";
  HostBuffer base(4 * kMiB, HostPages::kBase);
  EXPECT_EQ(base.hugeBytes(), 0u);
  std::string note = hugePageShortfall({&base}, HostPages::kHuge);
  EXPECT_NE(note.find("0 of 4 MiB"), std::string::npos) << note;
  EXPECT_NE(note.find("[madvise]"), std::string::npos) << note;
  EXPECT_EQ(hugePageShortfall({&base}, HostPages::kBase), "");  // not asked for: nothing to say
}

TEST(HostBufferTest, AMappingTheKernelRefusesIsAnErrorNotAnAbort) {
  auto b = HostBuffer::allocate(size_t{1} << 62, HostPages::kHuge);  // 4 EiB
  ASSERT_FALSE(b.isOk());
  EXPECT_EQ(b.status().code(), Code::kSystem);
  EXPECT_NE(b.status().message().find("cannot allocate 4194304 TiB"), std::string::npos)
      << b.status().toString();
}

TEST(AvailableMemoryTest, WhatFitsPassesAndWhatCannotSaysHowMuchOfWhat) {
  EXPECT_TRUE(checkAvailableMemory(1 << 20, 4, "the buffers").isOk());
  Status s = checkAvailableMemory(size_t{1} << 50, 2, "the buffers of -e 512 TiB");  // 1 PiB each
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);  // a configuration error: exit 2
  for (const char* part : {"the buffers of -e 512 TiB need 1048576.0 GiB per rank",
                           "2097152.0 GiB for the 2 ranks on this host", "MemAvailable"})
    EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
  // A launcher that does not say how many ranks share the host: counted as one.
  EXPECT_NE(checkAvailableMemory(size_t{1} << 50, 0, "x").message().find("for the 1 rank on"),
            std::string::npos);
}

}  // namespace
}  // namespace ccscope::core
