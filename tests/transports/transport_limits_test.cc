// The conformance suite's limits (transports/README.md, "Limits"), for every transport: a
// request table far smaller than the messages of one all-to-all still runs it, because the
// executor keeps at most Transport::inflightPerPeer() requests in flight per peer and
// direction. Ranks are real processes; the suite is instantiated in
// transport_conformance_test.cc.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "collectives/executor.h"
#include "collectives/schedule_builder.h"
#include "tests/transports/conformance_fixture.h"

namespace ccscope::transports {
namespace {

using conformance::Buffer;
using conformance::checkData;
using conformance::fillPattern;
using conformance::RankContext;
using conformance::RankRunOptions;
using conformance::TransportConformanceTest;
using core::Status;

constexpr int kRanks = 8;
constexpr uint32_t kPerPeer = 585;  // 7 peers x 585 = 4,095 messages each way per rank
constexpr uint64_t kMessage = 16;   // bytes (uint8 elements): the count, not the size, matters
constexpr uint32_t kSlots = 256;    // request table: far fewer than the 8,190 messages a rank posts
constexpr uint64_t kBlock = kPerPeer * kMessage;  // one peer's block of the all-to-all

// An all-to-all whose blocks go as kPerPeer separate messages, none waiting for another: only
// the executor's window keeps them out of the request table all at once.
collectives::Schedule manyMessageAlltoall(int rank) {
  collectives::ScheduleParams p;
  p.collective = collectives::Collective::kAlltoall;
  p.rank = rank;
  p.ranks = kRanks;
  p.count = kBlock * kRanks;
  collectives::ScheduleBuilder b(p);
  b.copy(collectives::atOut(rank * kBlock), collectives::atIn(rank * kBlock), kBlock);
  for (int peer = 0; peer < kRanks; ++peer) {
    for (uint32_t i = 0; peer != rank && i < kPerPeer; ++i) {
      b.send(peer, i, collectives::atIn(peer * kBlock + i * kMessage), kMessage);
      b.recv(peer, i, collectives::atOut(peer * kBlock + i * kMessage), kMessage);
    }
  }
  return b.finish();
}

int manyMessagesBody(RankContext& c) {
  Transport& t = c.transport;
  RANK_CHECK(c, t.requests().capacity() == kSlots,
             fmt::format("request table of {} slots", t.requests().capacity()));
  Buffer in(t, kBlock * kRanks), out(t, kBlock * kRanks);
  for (int peer = 0; peer < kRanks; ++peer)
    fillPattern(in.at(peer * kBlock), kBlock, uint64_t{100} * c.rank + peer);
  const collectives::Schedule sched = manyMessageAlltoall(c.rank);
  collectives::Executor ex;
  ex.prepare(sched, core::DataType::kUint8, core::ReduceOp::kSum);
  Status s = ex.run(t, collectives::Buffers{in.mr, out.mr, MemoryRegion()}, c.deadline);
  RANK_CHECK(c, s.isOk(), s.toString());
  for (int peer = 0; peer < kRanks; ++peer) {
    std::string bad = checkData(out.at(peer * kBlock), kBlock, uint64_t{100} * peer + c.rank);
    RANK_CHECK(c, bad.empty(), fmt::format("block from rank {}: {}", peer, bad));
  }
  // Every peer both ways at the window, and never the whole table.
  const uint32_t bound = 2 * (kRanks - 1) * t.inflightPerPeer();
  const uint32_t peak = t.requests().peakInUse();
  RANK_CHECK(
      c, peak <= bound && bound < kSlots,
      fmt::format("peak {} requests in use, window bound {}, table {}", peak, bound, kSlots));
  RANK_CHECK(c, t.requests().inUse() == 0, "requests left in use after the run");
  return 0;
}

TEST_P(TransportConformanceTest, ManyMessageAlltoallFitsASmallRequestTable) {
  RankRunOptions o = options(kRanks);
  o.options.request_slots = kSlots;
  std::string report = conformance::runRanks(o, manyMessagesBody);
  EXPECT_TRUE(report.empty()) << report;
}

}  // namespace
}  // namespace ccscope::transports
