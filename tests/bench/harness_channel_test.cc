// The harness's barriers and statistics run on a channel of their own (3 rank processes: the
// measured transport shm, the channel another transport under the bootstrap scope "harness/"):
// a sweep over both checks exactly, and once the measured transport is closed the channel still
// answers, so nothing of the harness's went over it.
#include "collectives/harness_channel.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/sweep.h"
#include "collectives/schedule_backend.h"
#include "tests/transports/rank_runner.h"

namespace ccscope::bench {
namespace {

using transports::conformance::RankContext;

core::Result<std::unique_ptr<collectives::HarnessChannel>> connectChannel(RankContext& c,
                                                                          const std::string& kind) {
  transports::TransportOptions o;
  o.local_ranks = c.size;
  o.request_slots = 1024;
  o.scope = "harness/";
  CCSCOPE_ASSIGN_OR_RETURN(auto t, transports::makeTransport(kind, o));
  CCSCOPE_RETURN_IF_ERROR(t->connect(c.store, c.deadline));
  return collectives::HarnessChannel::create(std::move(t));
}

int sweepBesideChannel(RankContext& c, const std::string& kind) {
  auto channel = connectChannel(c, kind);
  RANK_CHECK(c, channel.isOk(), channel.status().toString());
  RANK_CHECK(c, (*channel)->separate(), "the channel shares the measured transport");
  collectives::AlgorithmOptions ao;
  ao.algorithm = "recursive_doubling";
  auto b = collectives::ScheduleBackend::create(c.transport, ao, channel->get());
  RANK_CHECK(c, b.isOk(), b.status().toString());
  BenchConfig cfg;
  cfg.min_bytes = 8;
  cfg.max_bytes = uint64_t{64} * 1024;
  cfg.factor = 32;
  cfg.iters = 4;
  cfg.warmup = 1;
  cfg.checks = 1;
  reports::ResultSink sink;
  auto summary = runSweep(cfg, {b->get()}, sink);
  RANK_CHECK(c, summary.isOk(), summary.status().toString());
  RANK_CHECK(c, summary->rows == 3 * 2 && summary->wrong_total == 0,
             "rows " + std::to_string(summary->rows));

  // The measured transport goes; the harness's channel does not depend on it.
  RANK_CHECK(c, (*b)->barrier(c.deadline).isOk(), "barrier before close");
  c.transport.close();
  std::vector<int64_t> v{c.rank + 1, 1};
  RANK_CHECK(c, (*b)->sumInts(v, c.deadline).isOk(), "sumInts after the measured transport closed");
  RANK_CHECK(c, v[0] == c.size * (c.size + 1) / 2 && v[1] == c.size, "wrong sum");
  RANK_CHECK(c, (*channel)->barrier(c.deadline).isOk(), "barrier after close");
  // Nobody tears its channel down while a peer may still be reading from it.
  RANK_CHECK(c, c.store.barrier("harness-test-end", c.deadline).isOk(), "store barrier");
  return 0;
}

TEST(HarnessChannelTest, ShmChannelBesideShmMeasuredTransport) {
  auto o = transports::conformance::localRanks("shm", 3, 60);
  o.final_barrier = false;  // the measured transport is closed by then
  std::string report = transports::conformance::runRanks(
      o, [](RankContext& c) { return sweepBesideChannel(c, "shm"); });
  EXPECT_TRUE(report.empty()) << report;
}

TEST(HarnessChannelTest, TcpChannelBesideShmMeasuredTransport) {
  auto o = transports::conformance::localRanks("shm", 3, 60);
  o.final_barrier = false;
  std::string report = transports::conformance::runRanks(
      o, [](RankContext& c) { return sweepBesideChannel(c, "tcp"); });
  EXPECT_TRUE(report.empty()) << report;
}

}  // namespace
}  // namespace ccscope::bench
