// The algorithms of one sweep over a real transport (3 rank processes over shm) share one pair
// of buffers, and each one's results still check exactly: a turn never takes what the backend
// before it left in the buffers for its own input.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "bench/sweep.h"
#include "collectives/schedule_backend.h"
#include "tests/transports/rank_runner.h"

namespace ccscope::bench {
namespace {

using transports::conformance::RankContext;

int sharedBuffersBody(RankContext& c) {
  BenchConfig cfg;
  cfg.collective = collectives::Collective::kAllreduce;
  cfg.min_bytes = 1024;
  cfg.max_bytes = uint64_t{256} * 1024;
  cfg.factor = 16;
  cfg.iters = 3;
  cfg.warmup = 1;
  cfg.checks = 1;
  cfg.first_turn = 0;
  std::vector<std::unique_ptr<collectives::ScheduleBackend>> owned;
  std::vector<collectives::CollectiveBackend*> turns;
  for (const char* algo : {"ring", "recursive_doubling", "tree"}) {
    collectives::AlgorithmOptions ao;
    ao.algorithm = algo;
    auto b = collectives::ScheduleBackend::create(c.transport, ao);
    RANK_CHECK(c, b.isOk(), b.status().toString());
    turns.push_back(b->get());
    owned.push_back(std::move(b.value()));
  }
  reports::ResultSink sink;
  auto summary = runSweep(cfg, turns, sink);
  RANK_CHECK(c, summary.isOk(), summary.status().toString());
  RANK_CHECK(c, summary->rows == 3 * 3 * 2, "rows: " + std::to_string(summary->rows));
  RANK_CHECK(c, summary->wrong_total == 0, "wrong: " + std::to_string(summary->wrong_total));
  for (collectives::CollectiveBackend* b : turns)
    RANK_CHECK(
        c, b->sendBuffer() == turns[0]->sendBuffer() && b->recvBuffer() == turns[0]->recvBuffer(),
        b->algorithm() + " has buffers of its own");
  return 0;
}

TEST(SweepSharedBuffersTest, AlgorithmsTakingTurnsShareOnePairAndStillCheckExactly) {
  std::string report = transports::conformance::runRanks(
      transports::conformance::localRanks("shm", 3, 60), sharedBuffersBody);
  EXPECT_TRUE(report.empty()) << report;
}

}  // namespace
}  // namespace ccscope::bench
