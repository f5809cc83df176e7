// One shm message over 2 GiB arrives whole: a single process_vm_readv moves at most
// 2 GiB - 4 KiB (the kernel's MAX_RW_COUNT), so the single copy must loop. Its own test binary
// (and ctest name) because it maps 2.5 GiB in each of two ranks; a few seconds on 2 cores.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "tests/transports/conformance_fixture.h"

namespace ccscope::transports {
namespace {

using conformance::RankContext;
using core::Status;

// 2.5 GiB and an odd tail, so the last piece of the copy is neither a page nor a MAX_RW_COUNT.
constexpr size_t kLen = (size_t{5} << 29) + 4099;
constexpr size_t kStride = size_t{64} << 10;

// A cheap pattern: one word per 64 KiB at a position that moves with the stride (a shifted
// copy is caught too), and the tail's bytes; every other byte is zero. The sender touches only
// the pages it writes (the kernel reads the rest from the zero page): faulting in 2.5 GiB more
// would cost several times the copy.
uint64_t sampleWord(size_t i) { return (i + 1) * 0x9e3779b97f4a7c15ull; }
size_t samplePos(size_t i) { return i * kStride + (i % 8000) * 8; }
char tailByte(size_t i) { return static_cast<char>(i * 131 + 7); }
constexpr size_t kSamples = kLen / kStride;
constexpr size_t kTail = kLen % kStride;

// Anonymous memory; the receiver's in huge pages where the kernel allows (the copy writes all
// of it), the sender's in small ones (it writes one word in sixteen pages).
struct Mapping {
  void* p = MAP_FAILED;
  explicit Mapping(bool huge) {
    p = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
             0);
    if (p != MAP_FAILED) madvise(p, kLen, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  }
  ~Mapping() {
    if (p != MAP_FAILED) munmap(p, kLen);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  char* at(size_t off) const { return static_cast<char*>(p) + off; }
};

std::string checkReceived(const Mapping& m) {
  for (size_t i = 0; i < kSamples; ++i) {
    uint64_t got = 0;
    std::memcpy(&got, m.at(samplePos(i)), 8);
    if (got != sampleWord(i)) return fmt::format("the sample at byte {} differs", samplePos(i));
  }
  for (size_t i = 0; i < kTail; ++i)
    if (*m.at(kSamples * kStride + i) != tailByte(i)) return fmt::format("tail byte {} differs", i);
  return "";
}

int hugeBody(RankContext& c) {
  Transport& t = c.transport;
  Mapping m(/*huge=*/c.rank == 1);
  RANK_CHECK(c, m.p != MAP_FAILED, "cannot map 2.5 GiB");
  auto reg = t.registerMemory(m.p, kLen);
  RANK_CHECK(c, reg.isOk(), reg.status().toString());
  if (c.rank == 0) {
    for (size_t i = 0; i < kSamples; ++i) {
      const uint64_t w = sampleWord(i);
      std::memcpy(m.at(samplePos(i)), &w, 8);
    }
    for (size_t i = 0; i < kTail; ++i) *m.at(kSamples * kStride + i) = tailByte(i);
  }
  auto r = c.rank == 0 ? t.postSend(1, 0x25, reg->region(), 0, kLen)
                       : t.postRecv(0, 0x25, reg->region(), 0, kLen);
  Status s = r.isOk() ? t.wait(*r, c.deadline) : r.status();
  RANK_CHECK(c, s.isOk(), s.toString());
  if (c.rank == 0) return 0;
  std::string bad = checkReceived(m);
  RANK_CHECK(c, bad.empty(), bad);
  return 0;
}

TEST(ShmHugeMessageTest, MessageOverTwoGiBArrivesWhole) {
  conformance::RankRunOptions o = conformance::localRanks("shm", 2, 60);
  std::string report = conformance::runRanks(o, hugeBody);
  EXPECT_TRUE(report.empty()) << report;
}

}  // namespace
}  // namespace ccscope::transports
