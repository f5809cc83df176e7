#include "diagnostics/live/hang_diagnosis.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <csignal>

#include "diagnostics/live/flight_dump.h"

namespace ccscope::diagnostics {
namespace {

using core::Code;
using core::Layer;
using launch::RankHealth;
using launch::RankState;

std::string snap(uint64_t seq, const char* op, uint64_t bytes, int peer,
                 const char* state = "running", int step = 3, int steps = 10) {
  return nlohmann::json{{"seq", seq},     {"op", op},         {"algo", "ring"}, {"dtype", "float"},
                        {"bytes", bytes}, {"state", state},   {"step", step},   {"steps", steps},
                        {"peer", peer},   {"expected", 1024}, {"moved", 0},     {"idle_ms", 5000}}
      .dump();
}

// n healthy ranks on hosts h0.. (two ranks per host), all in the same allreduce, waiting on r-1.
HangInputs healthy(int n) {
  HangInputs in;
  in.self = 0;
  in.failure = core::Status(Code::kDeadlineExceeded, "timed out").withPeer(n - 1);
  for (int r = 0; r < n; ++r) {
    RankHealth h;
    h.rank = r;
    h.state = RankState::kAlive;
    h.host = fmt::format("h{}", r / 2);
    h.addr = fmt::format("10.9.0.{}", r / 2 + 1);
    h.progress = snap(41, "allreduce", 1 << 20, (r + n - 1) % n);
    in.table.push_back(h);
  }
  in.reachable = [](const std::string&) { return true; };
  return in;
}

TEST(HangDiagnosisTest, KilledRankIsTheApplicationCulprit) {
  auto in = healthy(8);
  in.table[5].state = RankState::kGone;
  in.table[5].ms_since_change = 4000;
  in.table[6].state = RankState::kAborted;  // a symptom: it gave up because of rank 5
  auto d = diagnoseHang(in);
  EXPECT_EQ(d.layer, Layer::kApplication);
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{5});
  EXPECT_NE(d.verdict.find("exited or was killed"), std::string::npos);
}

// Rank 2 read a killed rank's memory and aborted; its socket closed a few ms before the killed
// rank's. The killed one is the culprit; ranks that went far apart keep their order.
TEST(HangDiagnosisTest, KilledRankOutranksOneThatAbortedAtTheSameMoment) {
  auto in = healthy(4);
  in.table[1].state = RankState::kGone;
  in.table[1].ms_since_change = 4000;
  in.table[1].end_signal = SIGKILL;
  in.table[2].state = RankState::kGone;
  in.table[2].ms_since_change = 4006;
  in.table[2].end_signal = SIGABRT;
  auto d = diagnoseHang(in);
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{1});
  EXPECT_NE(d.verdict.find("rank 1 on h0 exited or was killed (signal 9, "), std::string::npos)
      << d.verdict;
  in.table[2].ms_since_change = 4600;
  EXPECT_EQ(diagnoseHang(in).culprit.ranks, std::vector<int>{2});
  in.table[2].ms_since_change = 4006;
  in.table[1].end_signal = 0;  // no launcher told the store: the store's order stands
  EXPECT_EQ(diagnoseHang(in).culprit.ranks, std::vector<int>{2});
}

TEST(HangDiagnosisTest, StoppedRankWhoseHostAnswersIsApplication) {
  auto in = healthy(4);
  in.table[2].state = RankState::kFrozen;
  in.table[2].ms_since_heartbeat = 6000;
  auto d = diagnoseHang(in);
  EXPECT_EQ(d.layer, Layer::kApplication);
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{2});
}

TEST(HangDiagnosisTest, SilentHostIsHostNetworkNamingItsRanks) {
  auto in = healthy(8);
  for (int r : {4, 5}) {  // both ranks of h2
    in.table[r].state = RankState::kFrozen;
    in.table[r].ms_since_heartbeat = 7000;
  }
  in.reachable = [](const std::string& addr) { return addr != "10.9.0.3"; };
  auto d = diagnoseHang(in);
  EXPECT_EQ(d.layer, Layer::kHostNetwork);
  EXPECT_EQ(d.culprit.ranks, (std::vector<int>{4, 5}));
  ASSERT_FALSE(d.culprit.links.empty());
  EXPECT_NE(d.culprit.links[0].find("h2"), std::string::npos);
}

TEST(HangDiagnosisTest, RankAtAnotherCollectiveDisagrees) {
  auto in = healthy(4);
  in.table[3].progress = snap(41, "allreduce", (1 << 20) + 16, 2);
  auto d = diagnoseHang(in);
  EXPECT_EQ(d.layer, Layer::kApplication);
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{3});
  EXPECT_NE(d.verdict.find("disagree"), std::string::npos);
}

TEST(HangDiagnosisTest, TwoHostsWaitingOnEachOtherIsTheirLink) {
  auto in = healthy(4);  // h0: ranks 0,1; h1: ranks 2,3
  for (auto& h : in.table) h.progress = snap(41, "allreduce", 1 << 20, -1, "done");
  in.table[1].progress = snap(41, "allreduce", 1 << 20, 2);
  in.table[2].progress = snap(41, "allreduce", 1 << 20, 1);
  in.failure = core::Status(Code::kDeadlineExceeded, "timed out").withPeer(1);
  in.self = 0;
  auto d = diagnoseHang(in);
  EXPECT_EQ(d.layer, Layer::kHostNetwork);
  EXPECT_EQ(d.culprit.links, std::vector<std::string>{"h0 <-> h1"});
}

// An 8-rank ring (two ranks per host) whose hop 5 -> 6 stopped delivering, as diagnosed by rank
// `self`, which timed out waiting on its predecessor: the link h2 <-> h3 and its two ranks.
void expectDeadHopFiveToSix(HangInputs in, int self) {
  in.self = self;
  in.failure = core::Status(Code::kDeadlineExceeded, "timed out").withPeer((self + 7) % 8);
  auto d = diagnoseHang(in);
  EXPECT_EQ(d.layer, Layer::kHostNetwork) << "self " << self << ": " << d.verdict;
  EXPECT_EQ(d.culprit.ranks, (std::vector<int>{5, 6})) << "self " << self;
  EXPECT_EQ(d.culprit.links, std::vector<std::string>{"h2 <-> h3"}) << "self " << self;
}

// Rank 5 finished the collective (its sends sat in socket buffers) and waits on rank 4 in the
// next one; everyone else waits on its predecessor. Seen from rank 5, the wait-for chain runs
// all the way round and the dead hop is the last one.
TEST(HangDiagnosisTest, RingCycleClosingOnThisRankNamesTheDeadHop) {
  auto in = healthy(8);
  in.table[5].progress = snap(42, "allreduce", 1 << 20, 4);
  for (int self : {5, 6, 0}) expectDeadHopFiveToSix(in, self);
}

// The same dead hop with every rank still in one collective (seen in CI): rank 6 stalled first,
// each rank after it one ring step later, and rank 5 ran on until it needed data that passes
// through rank 6. The hop whose sender is furthest beyond its receiver is the dead one.
TEST(HangDiagnosisTest, RingCycleInOneCollectiveNamesTheHopWhoseSenderRanFurthest) {
  auto in = healthy(8);
  for (int r = 0; r < 8; ++r)
    in.table[r].progress =
        snap(413, "allreduce", 1 << 20, (r + 7) % 8, "running", 20 + 2 * ((r + 2) % 8), 35);
  for (int self = 0; self < 8; ++self) expectDeadHopFiveToSix(in, self);
  // Everyone at the same step: nothing tells the hops apart, so no link is named.
  auto d = diagnoseHang(healthy(8));
  EXPECT_NE(d.layer, Layer::kHostNetwork) << d.verdict;
  EXPECT_EQ(d.confidence, "low");
}

// Rank 1 finished operation 39 and went off elsewhere; the others entered 40 and wait on it.
// Seen in CI (netns drop, 4 ranks, hop 1 -> 2 dead): the sender of the dead hop blocked in its
// send (the path took nothing), so it stopped early, and the hop 0 -> 1 had the widest step
// gap. Its unfinished send to rank 2 names the dead hop, seen from every rank.
TEST(HangDiagnosisTest, RingCycleWithASendThatNeverFinishedNamesItsHop) {
  auto in = healthy(4);  // h0: ranks 0,1; h1: ranks 2,3
  const int steps[] = {12, 8, 7, 10};
  for (int r = 0; r < 4; ++r)
    in.table[r].progress = snap(809, "allreduce", 65536, (r + 3) % 4, "failed", steps[r], 15);
  auto stuck = nlohmann::json::parse(in.table[1].progress);
  stuck["send_peer"] = 2;
  stuck["send_expected"] = 16384;
  stuck["send_moved"] = 0;
  in.table[1].progress = stuck.dump();
  for (int self = 0; self < 4; ++self) {
    in.self = self;
    in.failure = core::Status(Code::kDeadlineExceeded, "timed out").withPeer((self + 3) % 4);
    auto d = diagnoseHang(in);
    EXPECT_EQ(d.layer, Layer::kHostNetwork) << "self " << self << ": " << d.verdict;
    EXPECT_EQ(d.culprit.ranks, (std::vector<int>{1, 2})) << "self " << self << ": " << d.verdict;
    EXPECT_EQ(d.culprit.links, std::vector<std::string>{"h0 <-> h1"}) << "self " << self;
    EXPECT_NE(d.verdict.find("rank 1's send to rank 2 never finished (0 of 16384 B"),
              std::string::npos)
        << d.verdict;
  }
}

TEST(HangDiagnosisTest, HeadOfWaitForChainThatIsBusyElsewhere) {
  auto in = healthy(4);
  in.table[1].progress = snap(39, "allreduce", 1 << 20, -1, "done");
  for (int r : {0, 2, 3}) in.table[r].progress = snap(40, "allreduce", 1 << 20, 1);
  in.failure = core::Status(Code::kDeadlineExceeded, "timed out").withPeer(1);
  auto d = diagnoseHang(in);
  EXPECT_EQ(d.layer, Layer::kApplication);
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{1});
  EXPECT_NE(d.verdict.find("not inside this collective"), std::string::npos) << d.verdict;
}

// Rank 1 finished the very operation rank 2 still waits in: its part went out (a send completes
// once the transport has it), so it is the path from rank 1 to rank 2 that lost it, not an
// application that skipped the collective.
TEST(HangDiagnosisTest, SenderThatFinishedTheOperationTheReceiverWaitsInIsADeadPath) {
  auto in = healthy(4);  // h0: ranks 0,1; h1: ranks 2,3
  in.table[1].progress = snap(40, "allreduce", 1 << 20, -1, "done");
  for (int r : {0, 2, 3}) in.table[r].progress = snap(40, "allreduce", 1 << 20, (r + 3) % 4);
  in.self = 2;
  in.failure = core::Status(Code::kDeadlineExceeded, "timed out").withPeer(1);
  auto d = diagnoseHang(in);
  EXPECT_EQ(d.layer, Layer::kHostNetwork) << d.verdict;
  EXPECT_EQ(d.culprit.ranks, (std::vector<int>{1, 2}));
  EXPECT_EQ(d.culprit.links, std::vector<std::string>{"h0 <-> h1"});
}

// Seen in CI (netns drop, 8 ranks): the hang came in a collective the recorder did not show,
// so every rank's last record was the same finished operation. That a neighbour is "done" there
// says nothing about where it is now: no rank may be blamed as outside the collective. (The
// harness's collectives are recorded now; this guards every other unrecorded phase.)
TEST(HangDiagnosisTest, RanksAllPastTheLastRecordedOperationAreNotBlamedForSkippingIt) {
  for (int self = 0; self < 8; ++self) {
    auto in = healthy(8);
    for (auto& h : in.table) h.progress = snap(634, "allreduce", 65536, -1, "done", 35, 35);
    in.self = self;
    in.failure = core::Status(Code::kDeadlineExceeded, "timed out").withPeer((self + 7) % 8);
    auto d = diagnoseHang(in);
    EXPECT_EQ(d.verdict.find("not inside this collective"), std::string::npos)
        << "self " << self << ": " << d.verdict;
    EXPECT_EQ(d.confidence, "low") << "self " << self << ": " << d.verdict;
  }
}

TEST(HangDiagnosisTest, NeverJoinedIsBootstrap) {
  auto in = healthy(3);
  in.table[2].state = RankState::kNotJoined;
  in.table[2].progress.clear();
  auto d = diagnoseHang(in);
  EXPECT_EQ(d.layer, Layer::kBootstrap);
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{2});
}

TEST(FlightRecorderTest, SnapshotsAndDumpsShowTheRunningOperation) {
  core::FlightRecorder rec;
  EXPECT_EQ(flightSnapshot(rec), "");
  core::FlightEntry& e = rec.begin("allreduce", "ring", "float", 4096, 12);
  e.progress(5, core::nowNs());
  e.waitingOn(3, 2048, 100);
  auto s = parseSnapshot(flightSnapshot(rec));
  ASSERT_TRUE(s.valid);
  EXPECT_EQ(s.op, "allreduce");
  EXPECT_EQ(s.state, "running");
  EXPECT_EQ(s.step, 5u);
  EXPECT_EQ(s.peer, 3);
  EXPECT_EQ(s.moved, 100u);
  EXPECT_EQ(s.send_peer, -1);  // no unfinished send recorded: the field is left out
  EXPECT_EQ(flightSnapshot(rec).find("send_peer"), std::string::npos);
  e.sendStuck(2, 4096, 1000);
  s = parseSnapshot(flightSnapshot(rec));
  EXPECT_EQ(s.send_peer, 2);
  EXPECT_EQ(s.send_expected, 4096u);
  EXPECT_EQ(s.send_moved, 1000u);
  core::FlightRecorder::end(e, true);
  EXPECT_EQ(rec.begin("allreduce", "ring", "float", 8, 2).stuck_send_peer.load(), -1);  // reset
  for (int i = 0; i < 100; ++i)
    core::FlightRecorder::end(rec.begin("barrier", "d", "none", 0, 2), true);
  auto dump = flightDump(rec, 1, "h");
  EXPECT_EQ(dump["entries"].size(), core::FlightRecorder::kEntries);
  EXPECT_EQ(dump["entries"].back()["seq"], 102);
}

}  // namespace
}  // namespace ccscope::diagnostics
