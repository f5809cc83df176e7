// The executor's failure paths and its stream-ordered mode against a scripted transport
// (scripted_transport.h): a failed request, a deadline, whom the flight recorder says it waits
// on, and dependencies counted as met at enqueue.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "collectives/schedule.h"
#include "collectives/schedule_builder.h"
#include "core/flight_record.h"
#include "scripted_transport.h"

namespace ccscope::collectives {
namespace {

using core::Code;
using testing::EventKind;
using testing::HandSchedule;
using testing::PostState;
using testing::ScriptedCompute;
using testing::ScriptedRank;
using testing::ScriptedTransport;
using transports::Dir;

core::Deadline failSoon() { return core::Deadline::after(std::chrono::seconds(2)); }
constexpr auto kShortDeadline = std::chrono::milliseconds(50);

size_t findPost(const ScriptedTransport& t, int peer, Dir dir) {
  for (size_t i = 0; i < t.posts().size(); ++i)
    if (t.posts()[i].peer == peer && t.posts()[i].dir == dir) return i;
  return SIZE_MAX;
}

std::vector<size_t> cancelled(const ScriptedTransport& t) {
  std::vector<size_t> out;
  for (const auto& e : t.events())
    if (e.kind == EventKind::kCancel) out.push_back(e.post);
  return out;
}

TEST(ExecutorFailureTest, AFailedRequestFailsTheRunAndCancelsEverythingElse) {
  ScriptedRank r(0, 4, 8);
  HandSchedule h(0, 4, 8);
  for (int p = 1; p < 4; ++p) h.send(p, p, atIn(p), 1);
  for (int p = 1; p < 4; ++p) h.recv(p, 10 + p, atScratch(p), 1);
  r.prepare(h.finish());
  r.t.setScript([](ScriptedTransport& t) {
    // The failure is listed first; the send to 1 finishes right after it, unreported.
    t.fail(findPost(t, 2, Dir::kRecv), core::Status(Code::kRemoteError, "peer 2 said no"));
    t.complete(findPost(t, 1, Dir::kSend));
  });
  core::Status s = r.run(failSoon());
  EXPECT_EQ(s.code(), Code::kRemoteError) << s.toString();
  EXPECT_NE(s.message().find("peer 2 said no"), std::string::npos) << s.toString();
  // Each request still pending was cancelled once; the finished one only released.
  std::vector<size_t> want = {findPost(r.t, 2, Dir::kSend), findPost(r.t, 3, Dir::kSend),
                              findPost(r.t, 1, Dir::kRecv), findPost(r.t, 3, Dir::kRecv)};
  std::vector<size_t> got = cancelled(r.t);
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
  uint32_t sinks = 0;
  for (const auto& p : r.t.posts()) {
    EXPECT_NE(p.state, PostState::kPending);
    sinks += p.state == PostState::kSink;
  }
  // Only the cancelled receives the contract keeps as sinks still hold a slot.
  EXPECT_EQ(sinks, 2u);
  EXPECT_EQ(r.t.requests().inUse(), sinks);
}

TEST(ExecutorFailureTest, ADeadlineNamesTheOldestOutstandingRequestAndCancelsAll) {
  ScriptedRank r(0, 4, 8);
  HandSchedule h(0, 4, 8);
  h.send(2, 0, atIn(0), 1);  // posted first, never completes
  const uint32_t in = h.recv(3, 1, atScratch(0), 1);
  h.send(1, 2, atScratch(0), 1, {in});  // posted later (a lower lane), never completes
  r.prepare(h.finish());
  r.t.setScript([](ScriptedTransport& t) { t.complete(findPost(t, 3, Dir::kRecv)); });
  const auto t0 = std::chrono::steady_clock::now();
  core::Status s = r.run(core::Deadline::after(kShortDeadline));
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s.toString();
  EXPECT_GE(took, kShortDeadline);
  EXPECT_LT(took, std::chrono::seconds(1));
  EXPECT_EQ(s.peer(), 2) << s.toString();
  EXPECT_NE(s.message().find("for rank 2"), std::string::npos) << s.toString();
  ASSERT_EQ(r.t.posts().size(), 3u);
  EXPECT_EQ(cancelled(r.t).size(), 2u);
  EXPECT_TRUE(r.t.pending().empty());
  EXPECT_EQ(r.t.requests().inUse(), 0u);
}

// Sends to peers 1, 2, 3 (posted in that order); 1 completes, then 3, and 2 never does: the
// recorder must name 2, the oldest outstanding, never the newest.
TEST(ExecutorFailureTest, FlightRecorderWaitsOnTheOldestOutstandingPeer) {
  ScriptedRank r(0, 4, 8);
  HandSchedule h(0, 4, 8);
  for (int p = 1; p < 4; ++p) h.send(p, p, atIn(p), 1);
  r.prepare(h.finish());
  core::FlightRecorder recorder;
  core::FlightEntry& fe = recorder.begin("allreduce", "scripted", "float", 4, 3);
  std::vector<int> seen;  // whom the recorder named at each call, after the first completion
  r.t.setScript([&](ScriptedTransport& t) {
    if (t.complete(findPost(t, 1, Dir::kSend))) return;
    seen.push_back(fe.waiting_peer.load());
    if (seen.size() == 3) t.complete(findPost(t, 3, Dir::kSend));
  });
  // Long enough for a few observations even on a loaded machine.
  core::Status s = r.run(core::Deadline::after(std::chrono::milliseconds(200)), &fe);
  core::FlightRecorder::end(fe, s.isOk());
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s.toString();
  ASSERT_GT(seen.size(), 3u);
  for (int p : seen) ASSERT_EQ(p, 2) << "named the wrong peer";
  const core::FlightEntry& e = recorder.entry(recorder.latestSeq());
  EXPECT_EQ(e.state.load(), core::FlightState::kFailed);
  EXPECT_EQ(e.waiting_peer.load(), 2);
  EXPECT_EQ(e.stuck_send_peer.load(), 2);
}

// recv -> reduce -> send, twice, the second receive reusing the first one's scratch.
Schedule streamSchedule() {
  HandSchedule h(0, 2, 8);
  const uint32_t in0 = h.recv(1, 0, atScratch(0), 4);
  const uint32_t sum0 = h.reduce(atOut(0), atIn(0), atScratch(0), 4, {in0});
  h.send(1, 1, atOut(0), 4, {sum0});
  const uint32_t in1 = h.recv(1, 2, atScratch(0), 4, {sum0});
  const uint32_t sum1 = h.reduce(atOut(4), atIn(4), atScratch(0), 4, {in1});
  h.send(1, 3, atOut(4), 4, {sum1});
  return h.finish();
}

// The stream, emulated: the next enqueued item (a post or a local step) finishes per call.
struct Stream {
  ScriptedTransport& t;
  ScriptedCompute& c;
  size_t posts_done = 0;
  std::vector<std::vector<float>> sent;  // each send's payload when it completed

  void step() {
    if (c.ran() < c.started().size() && c.started()[c.ran()].posts_before == posts_done) {
      c.runNext();
      return;
    }
    if (posts_done == t.posts().size()) return;
    const testing::Posted& p = t.posts()[posts_done];
    std::vector<float> v(p.len / sizeof(float));
    if (p.dir == Dir::kSend) {
      std::memcpy(v.data(), p.buf, p.len);
      sent.push_back(v);
    } else {
      for (size_t i = 0; i < v.size(); ++i) v[i] = float(size_t{1000} * (p.scheduleTag() + 1) + i);
    }
    t.complete(posts_done++, {reinterpret_cast<const char*>(v.data()), p.len});
  }
};

TEST(ExecutorStreamOrderedTest, EnqueuesEveryOpBeforeAnyCompletesThenWaitsAtTheEnd) {
  ScriptedRank r(0, 2, 8, {.stream_ordered = true});
  ScriptedCompute compute(r.t);
  r.ex.setCompute(&compute);
  r.prepare(streamSchedule());
  Stream stream{r.t, compute, 0, {}};
  r.t.setScript([&](ScriptedTransport& t) {
    if (t.progressCalls() == 1) {  // the first wait: everything must be enqueued by now
      EXPECT_EQ(t.posts().size(), 4u);
      EXPECT_EQ(compute.started().size(), 2u);
    }
    stream.step();
  });
  ASSERT_TRUE(r.run(failSoon()).isOk());
  EXPECT_GE(r.t.progressCalls(), 6u);  // one item of the stream per call
  // Enqueued in dependency order: recv, reduce, send, recv, reduce, send.
  ASSERT_EQ(r.t.posts().size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(r.t.posts()[i].scheduleTag(), i);
  ASSERT_EQ(compute.started().size(), 2u);
  EXPECT_EQ(compute.started()[0].posts_before, 1u);
  EXPECT_EQ(compute.started()[1].posts_before, 3u);
  // run() returned only once everything finished, and the arithmetic ran in stream order.
  EXPECT_TRUE(r.t.pending().empty());
  EXPECT_EQ(compute.ran(), 2u);
  for (size_t i = 0; i < 8; ++i)
    EXPECT_EQ(r.out[i], r.in[i] + float(size_t{1000} * (i < 4 ? 1 : 3) + i % 4)) << i;
  ASSERT_EQ(stream.sent.size(), 2u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(stream.sent[0][i], r.out[i]);
    EXPECT_EQ(stream.sent[1][i], r.out[4 + i]);
  }
}

TEST(ExecutorStreamOrderedTest, RefusesAComputeBackendThatIsNotStreamOrdered) {
  ScriptedRank r(0, 2, 8, {.stream_ordered = true});
  ScriptedCompute host_driven(r.t, false);
  r.prepare(streamSchedule());
  for (ComputeBackend* c : {static_cast<ComputeBackend*>(nullptr),  // the CPU
                            static_cast<ComputeBackend*>(&host_driven)}) {
    r.ex.setCompute(c);
    core::Status s = r.run(core::Deadline::after(kShortDeadline));
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.toString();
    EXPECT_TRUE(r.t.posts().empty());
  }
}

}  // namespace
}  // namespace ccscope::collectives
