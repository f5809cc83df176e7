// The harness's own collectives (barrier, statistics reductions) are in the flight recorder, so
// a hang inside one shows whom each rank waits on. Real rank processes over tcp.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "collectives/schedule_backend.h"
#include "diagnostics/live/flight_dump.h"
#include "tests/transports/rank_runner.h"

namespace ccscope::diagnostics {
namespace {

using transports::conformance::RankContext;

int harnessBody(RankContext& c) {
  collectives::AlgorithmOptions ao;
  auto backend = collectives::ScheduleBackend::create(c.transport, ao);
  RANK_CHECK(c, backend.isOk(), backend.status().toString());
  core::FlightRecorder rec;
  (*backend)->setFlightRecorder(&rec);

  // Healthy: a barrier and a reduction, each one finished record.
  RANK_CHECK(c, (*backend)->barrier(core::Deadline::afterSeconds(10)).isOk(), "barrier");
  Snapshot s = parseSnapshot(flightSnapshot(rec));
  RANK_CHECK(c, s.valid && s.op == core::kHarnessBarrier && s.state == "done", flightSnapshot(rec));
  std::vector<double> v{static_cast<double>(c.rank), 1.0};
  RANK_CHECK(c, (*backend)->maxDoubles(v, core::Deadline::afterSeconds(10)).isOk(), "maxDoubles");
  RANK_CHECK(c, v[0] == c.size - 1 && v[1] == 1.0, "wrong maximum");
  s = parseSnapshot(flightSnapshot(rec));
  RANK_CHECK(c,
             s.valid && s.seq == 2 && s.op == "allreduce" && s.algo == core::kHarnessReduction &&
                 s.dtype == "double" && s.bytes == 16 && s.state == "done",
             flightSnapshot(rec));

  // The last rank never joins the next reduction: the others fail in it, and their records
  // say so and name the rank each waited on (its ring predecessor).
  if (c.rank == c.size - 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return 0;
  }
  std::vector<int64_t> w{1};
  core::Status st = (*backend)->sumInts(w, core::Deadline::afterSeconds(0.5));
  RANK_CHECK(c, !st.isOk(), "a reduction without the last rank succeeded");
  RANK_CHECK(c, st.message().find("harness statistics reduction") != std::string::npos,
             st.toString());
  s = parseSnapshot(flightSnapshot(rec));
  RANK_CHECK(c,
             s.valid && s.seq == 3 && s.algo == core::kHarnessReduction && s.dtype == "int64" &&
                 s.state == "failed" && s.peer == (c.rank + c.size - 1) % c.size,
             flightSnapshot(rec));
  return 0;
}

// np real rank processes over tcp, without the runner's final barrier: one rank leaves early.
std::string runOverTcp(int np, const transports::conformance::RankBody& body) {
  transports::conformance::RankRunOptions o = transports::conformance::localRanks("tcp", np, 30);
  o.final_barrier = false;
  return transports::conformance::runRanks(o, body);
}

TEST(HarnessRecordTest, BarrierAndReductionsAreRecordedWithTheirWaits) {
  std::string report = runOverTcp(3, harnessBody);
  EXPECT_TRUE(report.empty()) << report;
}

// A send the transport cannot take (its peer never reads: 64 MiB is far beyond the socket
// buffers) is still unfinished when the operation fails, and the record names it: that is what
// tells a dead path from a rank that merely stalled behind it.
int stuckSendBody(RankContext& c) {
  collectives::AlgorithmOptions ao;
  auto backend = collectives::ScheduleBackend::create(c.transport, ao);
  RANK_CHECK(c, backend.isOk(), backend.status().toString());
  constexpr uint64_t kCount = 16 << 20;  // floats
  RANK_CHECK(c, (*backend)->allocate(kCount * 4, core::HostPages::kBase).isOk(), "allocate");
  collectives::OpConfig cfg;
  cfg.count = kCount;
  RANK_CHECK(c, (*backend)->prepare(cfg).isOk(), "prepare");
  if (c.rank == 1) {  // never joins, never reads
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return 0;
  }
  core::FlightRecorder rec;
  (*backend)->setFlightRecorder(&rec);
  RANK_CHECK(c, !(*backend)->run(false, core::Deadline::afterSeconds(0.5)).isOk(), "run succeeded");
  Snapshot s = parseSnapshot(flightSnapshot(rec));
  RANK_CHECK(c, s.valid && s.state == "failed" && s.peer == 1, flightSnapshot(rec));
  RANK_CHECK(c, s.send_peer == 1 && s.send_expected > 0 && s.send_moved < s.send_expected,
             flightSnapshot(rec));
  return 0;
}

TEST(HarnessRecordTest, AFailedOperationKeepsTheSendThatNeverFinished) {
  std::string report = runOverTcp(2, stuckSendBody);
  EXPECT_TRUE(report.empty()) << report;
}

}  // namespace
}  // namespace ccscope::diagnostics
