// The executor against a scripted transport (scripted_transport.h): posting order, out-of-order
// completions, the in-flight window, batch brackets and the finished list, without processes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "collectives/schedule.h"
#include "collectives/schedule_builder.h"
#include "scripted_transport.h"

namespace ccscope::collectives {
namespace {

using testing::EventKind;
using testing::Mailbox;
using testing::ScriptedOptions;
using testing::ScriptedRank;
using testing::ScriptedTransport;
using transports::Dir;

core::Deadline soon() { return core::Deadline::after(std::chrono::seconds(2)); }

// Schedule tags of the posts to or from `peer` in direction `dir`, in posting order.
std::vector<uint32_t> tagsPosted(const ScriptedTransport& t, int peer, Dir dir) {
  std::vector<uint32_t> tags;
  for (const auto& p : t.posts())
    if (p.peer == peer && p.dir == dir) tags.push_back(p.scheduleTag());
  return tags;
}

void completeAll(ScriptedTransport& t) {
  for (size_t i : t.pending()) t.complete(i);
}

TEST(ExecutorTest, PostsEachPeersMessagesInScheduleOrderEvenWhenALaterOneIsReadyFirst) {
  ScriptedRank r(0, 3, 8);
  testing::HandSchedule h(0, 3, 8);
  const uint32_t gate = h.recv(2, 0, atScratch(0), 1);
  h.send(1, 1, atScratch(0), 1, {gate});  // waits for the receive
  h.send(1, 2, atIn(1), 1);               // ready at once, but after tag 1 on this lane
  h.recv(1, 3, atScratch(2), 1, {gate});
  h.recv(1, 4, atScratch(3), 1);
  r.prepare(h.finish());
  // Hold the gate for a few passes, so a wrong executor has the chance to post out of turn.
  r.t.setScript([](ScriptedTransport& t) {
    if (t.progressCalls() < 4) return;
    completeAll(t);
  });
  ASSERT_TRUE(r.run(soon()).isOk());
  EXPECT_EQ(tagsPosted(r.t, 1, Dir::kSend), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(tagsPosted(r.t, 1, Dir::kRecv), (std::vector<uint32_t>{3, 4}));
  // Nothing to peer 1 went out before the gate completed.
  ASSERT_GE(r.t.events().size(), 3u);
  for (const auto& e : r.t.events()) {
    if (e.kind == EventKind::kComplete) break;
    if (e.kind == EventKind::kPost) {
      EXPECT_EQ(r.t.posts()[e.post].peer, 2);
    }
  }
}

// Two ranks on threads joined by a mailbox that completes one request per call, the last posted
// first, so the executor sees dependents' inputs arrive out of posting order.
TEST(ExecutorTest, OutOfOrderCompletionsStillGiveTheRightAllreduce) {
  constexpr size_t kElems = 64;
  ScriptedRank r0(0, 2, kElems), r1(1, 2, kElems);
  Mailbox wire;
  for (ScriptedRank* r : {&r0, &r1}) {
    r->prepare(ringAllreduceSchedule(r->t.rank(), 2, kElems, 8, false));
    r->t.setScript([&wire](ScriptedTransport& t) { wire.pump(t, true, 1); });
  }
  core::Status s1;
  std::thread peer([&] { s1 = r1.run(soon()); });
  core::Status s0 = r0.run(soon());
  peer.join();
  ASSERT_TRUE(s0.isOk()) << s0.toString();
  ASSERT_TRUE(s1.isOk()) << s1.toString();
  for (size_t i = 0; i < kElems; ++i) {
    ASSERT_EQ(r0.out[i], r0.in[i] + r1.in[i]) << "rank 0 element " << i;
    ASSERT_EQ(r1.out[i], r0.in[i] + r1.in[i]) << "rank 1 element " << i;
  }
  // The scenario happened: some request completed before one posted earlier.
  bool reordered = false;
  size_t last = 0;
  for (const auto& e : r0.t.events()) {
    if (e.kind != EventKind::kComplete) continue;
    reordered = reordered || e.post < last;
    last = e.post;
  }
  EXPECT_TRUE(reordered);
}

// The most requests in flight at once to/from `peer` in `dir`, from the log.
uint32_t peakInflight(const ScriptedTransport& t, int peer, Dir dir) {
  uint32_t now = 0, peak = 0;
  for (const auto& e : t.events()) {
    if (e.post >= t.posts().size()) continue;  // a batch bracket
    const auto& p = t.posts()[e.post];
    if (p.peer != peer || p.dir != dir) continue;
    if (e.kind == EventKind::kPost)
      peak = std::max(peak, ++now);
    else
      --now;
  }
  return peak;
}

TEST(ExecutorTest, KeepsAtMostTheWindowInFlightPerPeerAndDirection) {
  // A window of 2 from the capability, then from a small request table (7 / (2 * 1 + 1)).
  for (ScriptedOptions o : {ScriptedOptions{.max_inflight_per_peer = 2},
                            ScriptedOptions{.max_inflight_per_peer = 64, .request_slots = 7}}) {
    SCOPED_TRACE(o.request_slots);
    constexpr uint32_t kMessages = 12;
    ScriptedRank r(0, 2, kMessages, o);
    ASSERT_EQ(r.t.inflightPerPeer(), 2u);
    testing::HandSchedule h(0, 2, kMessages);
    for (uint32_t m = 0; m < kMessages; ++m) {
      h.send(1, 2 * m, atIn(m), 1);
      h.recv(1, 2 * m + 1, atScratch(m), 1);
    }
    r.prepare(h.finish());
    // One completion per call, the newest first: the window must refill as they come.
    r.t.setScript([](ScriptedTransport& t) {
      if (auto p = t.pending(); !p.empty()) t.complete(p.back());
    });
    ASSERT_TRUE(r.run(soon()).isOk());
    EXPECT_EQ(r.t.posts().size(), 2 * kMessages);
    EXPECT_EQ(peakInflight(r.t, 1, Dir::kSend), 2u);
    EXPECT_EQ(peakInflight(r.t, 1, Dir::kRecv), 2u);
    EXPECT_EQ(r.t.requests().inUse(), 0u);
  }
}

TEST(ExecutorTest, PostsOnlyInsideBatchesThatDoNotNestAndAreNeverEmpty) {
  ScriptedRank r(0, 3, 8);
  testing::HandSchedule h(0, 3, 8);
  h.send(1, 0, atIn(0), 1);
  h.send(2, 1, atIn(1), 1);
  const uint32_t in = h.recv(1, 2, atScratch(0), 1);
  h.send(2, 3, atScratch(0), 1, {in});
  r.prepare(h.finish());
  // One completion per call, oldest first: most passes find nothing new to post.
  r.t.setScript([](ScriptedTransport& t) {
    if (auto p = t.pending(); !p.empty()) t.complete(p.front());
  });
  ASSERT_TRUE(r.run(soon()).isOk());
  bool open = false;
  int batches = 0;
  EventKind prev = EventKind::kComplete;
  for (const auto& e : r.t.events()) {
    if (e.kind == EventKind::kBeginBatch) {
      EXPECT_FALSE(open) << "nested batch";
      open = true;
      ++batches;
    } else if (e.kind == EventKind::kEndBatch) {
      EXPECT_TRUE(open) << "end without begin";
      EXPECT_NE(prev, EventKind::kBeginBatch) << "empty batch";
      open = false;
    } else if (e.kind == EventKind::kPost) {
      EXPECT_TRUE(open) << "post outside a batch";
    }
    prev = e.kind;
  }
  EXPECT_FALSE(open);
  // The three ready at once went in the first batch; the dependent send in the next one.
  ASSERT_EQ(r.t.posts().size(), 4u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(r.t.posts()[i].batch, 0) << i;
  EXPECT_EQ(r.t.posts()[3].batch, 1);
  EXPECT_EQ(batches, 2);
}

// Foreign requests on the executor's transport, as the test leaves them before a run.
struct Foreign {
  std::vector<char> mem = std::vector<char>(64);
  transports::Registration reg;
  transports::Request left, waited, dropped;
};

// `left` finished and unreleased; `waited` finished and released by wait (its entry stays on the
// finished list); `dropped` cancelled unfinished. The run's first two posts reuse the slots of
// `dropped`, then of `waited`.
void leaveForeignRequests(ScriptedTransport& t, Foreign& f) {
  f.reg = std::move(*t.registerMemory(f.mem.data(), f.mem.size()));
  f.left = *t.postRecv(1, 0x7abcde, f.reg.region(), 0, 8);
  f.waited = *t.postRecv(1, 0x7abcdf, f.reg.region(), 8, 8);
  f.dropped = *t.postSend(2, 0x7abce0, f.reg.region(), 16, 8);
  t.complete(t.indexOf(f.left));
  t.complete(t.indexOf(f.waited));
  ASSERT_TRUE(t.wait(f.waited, soon()).isOk());
  t.cancel(f.dropped);
}

// The executor must neither take others' finished requests for its own nor release them, and a
// stale entry of a slot it reuses must not hide its own completions (sends finishing at post, as
// on tcp, land on the list before the executor drains it).
TEST(ExecutorTest, IgnoresOtherCallersRequestsOnTheFinishedList) {
  ScriptedRank r(0, 3, 8);
  Foreign f;
  leaveForeignRequests(r.t, f);
  r.t.setCompleteSendsAtPost(true);
  testing::HandSchedule h(0, 3, 8);
  h.send(1, 0, atIn(0), 1);
  h.send(2, 1, atIn(1), 1);
  const uint32_t in = h.recv(1, 2, atScratch(0), 1);
  h.send(1, 3, atScratch(0), 1, {in});
  r.prepare(h.finish());
  transports::Request during;
  r.t.setScript([&](ScriptedTransport& t) {
    if (!during.valid()) {  // finishes ahead of the executor's receive
      during = *t.postRecv(1, 0x7abce1, f.reg.region(), 24, 8);
      t.complete(t.indexOf(during));
    }
    completeAll(t);
  });
  const core::Status s = r.run(core::Deadline::after(std::chrono::milliseconds(500)));
  ASSERT_TRUE(s.isOk()) << s.toString();
  ASSERT_GE(r.t.posts().size(), 5u);  // the scenario: the first two posts reused those slots
  EXPECT_EQ(r.t.posts()[3].req.slot, f.dropped.slot);
  EXPECT_EQ(r.t.posts()[4].req.slot, f.waited.slot);
  EXPECT_EQ(tagsPosted(r.t, 1, Dir::kSend), (std::vector<uint32_t>{0, 3}));
  for (transports::Request q : {f.left, during}) {
    // Still the test's: finished, not released (a released slot is reused, its handle stale).
    const auto& rec = r.t.requests().slot(q.slot);
    ASSERT_TRUE(rec.gen == q.gen && rec.state == transports::ReqState::kDone);
    EXPECT_TRUE(r.t.wait(q, soon()).isOk());
  }
  EXPECT_EQ(r.t.requests().inUse(), 0u);
}

}  // namespace
}  // namespace ccscope::collectives
