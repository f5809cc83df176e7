#include "burnin/pair_measure.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/transports/rank_runner.h"

namespace ccscope::burnin {
namespace {

namespace conf = transports::conformance;

// Two real ranks over tcp: the lead (lower rank) gets every figure, the partner none; the timed
// tests move at least the two messages a calibration allows and stop near their target time.
TEST(PairMeasureTest, TheLeadReportsEveryFigureOverTcp) {
  std::string report = conf::runRanks(conf::localRanks("tcp", 2, 30), [](conf::RankContext& c) {
    PairSettings s;
    s.bytes = 64 << 10;
    s.lat_iters = 200;
    s.seconds = 0.05;
    s.timeout_s = 10;
    std::vector<char> mem(2 * s.bytes);
    auto reg = c.transport.registerMemory(mem.data(), mem.size());
    RANK_CHECK(c, reg.isOk(), reg.status().toString());
    const bool lead = c.rank == 0;
    const int64_t t0 = core::nowNs();
    auto f = measurePair(c.transport, reg->region(), 1 - c.rank, lead, s);
    const double took = static_cast<double>(core::nowNs() - t0) / 1e9;
    RANK_CHECK(c, f.isOk(), f.status().toString());
    if (!lead) {
      RANK_CHECK(c, f->uni_messages == 0 && f->lat_samples == 0, "the partner reports nothing");
      return 0;
    }
    RANK_CHECK(c, f->lat_samples == s.lat_iters, std::to_string(f->lat_samples));
    RANK_CHECK(c,
               f->p50_us > 0 && f->p50_us <= f->p99_us && f->p99_us <= f->p999_us &&
                   f->p999_us <= f->max_us,
               "percentiles out of order");
    RANK_CHECK(c, f->uni_messages >= 2 && f->bidir_messages >= 2,
               std::to_string(f->uni_messages) + " " + std::to_string(f->bidir_messages));
    RANK_CHECK(c, f->uni_gbps > 0 && f->bidir_gbps > 0, "no bandwidth");
    // Two timed tests of 0.05 s each, cut 4x past it: well under 5 s even on a loaded host.
    RANK_CHECK(c, took < 5, std::to_string(took) + " s");
    return 0;
  });
  EXPECT_TRUE(report.empty()) << report;
}

}  // namespace
}  // namespace ccscope::burnin
