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
constexpr size_t kPage = 4096;

// A cheap pattern: one word per page at a position that moves with the page, and the tail's
// bytes. Every other byte is zero; the receiver starts from the sentinel, so a page the copy
// skipped keeps it.
uint64_t sampleWord(size_t page) { return (page + 1) * 0x9e3779b97f4a7c15ull; }
size_t samplePos(size_t page) { return page * kPage + (page % 500) * 8; }
char tailByte(size_t i) { return static_cast<char>(i * 131 + 7); }
constexpr size_t kTail = kLen % kPage;

// Anonymous memory, in huge pages where the kernel allows: faulting 2.5 GiB in 4 KiB pages
// would take longer than the copy.
struct Mapping {
  void* p = MAP_FAILED;
  Mapping() {
    p = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
             0);
    if (p != MAP_FAILED) madvise(p, kLen, MADV_HUGEPAGE);
  }
  ~Mapping() {
    if (p != MAP_FAILED) munmap(p, kLen);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  char* at(size_t off) const { return static_cast<char*>(p) + off; }
};

std::string checkReceived(const Mapping& m) {
  const size_t pages = kLen / kPage;
  for (size_t page = 0; page < pages; ++page) {
    uint64_t got = 0, last = 1;
    std::memcpy(&got, m.at(samplePos(page)), 8);
    std::memcpy(&last, m.at(page * kPage + kPage - 8), 8);
    if (got != sampleWord(page) || last != 0)
      return fmt::format("page {} (byte {}) differs", page, page * kPage);
  }
  for (size_t i = 0; i < kTail; ++i)
    if (*m.at(pages * kPage + i) != tailByte(i)) return fmt::format("tail byte {} differs", i);
  return "";
}

int hugeBody(RankContext& c) {
  Transport& t = c.transport;
  Mapping m;
  RANK_CHECK(c, m.p != MAP_FAILED, "cannot map 2.5 GiB");
  auto reg = t.registerMemory(m.p, kLen);
  RANK_CHECK(c, reg.isOk(), reg.status().toString());
  const size_t pages = kLen / kPage;
  if (c.rank == 0) {
    for (size_t page = 0; page < pages; ++page) {
      const uint64_t w = sampleWord(page);
      std::memcpy(m.at(samplePos(page)), &w, 8);
    }
    for (size_t i = 0; i < kTail; ++i) *m.at(pages * kPage + i) = tailByte(i);
  } else {
    std::memset(m.p, conformance::kSentinel, kLen);
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
