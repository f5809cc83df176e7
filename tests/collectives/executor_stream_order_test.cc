// The order a stream-ordered transport (NCCL) sees: every op in schedule order, a step's sends
// and receives in one batch, and never an op in the batch of one it depends on (a batch runs
// unordered, as an NCCL group does).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "collectives/schedule.h"
#include "scripted_transport.h"

namespace ccscope::collectives {
namespace {

using testing::EventKind;
using testing::ScriptedCompute;
using testing::ScriptedRank;
using testing::ScriptedTransport;
using transports::Dir;

// Finishes what a stream would have by now: everything enqueued, in enqueue order (a local
// step after the posts made before it).
void drain(ScriptedTransport& t, ScriptedCompute& c, bool one = false) {
  for (bool first = true; first || !one; first = false) {
    const std::vector<size_t> pending = t.pending();
    const size_t post = pending.empty() ? SIZE_MAX : pending.front();
    if (c.ran() < c.started().size() && c.started()[c.ran()].posts_before <= post) {
      c.runNext();
      continue;
    }
    if (post == SIZE_MAX) return;
    t.complete(post);
  }
}

// Each batch's posts, as schedule ops (comm ops are posted in schedule order, checked here).
std::vector<std::vector<uint32_t>> batchesOf(const ScriptedRank& r) {
  std::vector<uint32_t> comm_ops;
  for (uint32_t i = 0; i < r.sched.ops.size(); ++i)
    if (r.sched.ops[i].kind == OpKind::kSend || r.sched.ops[i].kind == OpKind::kRecv)
      comm_ops.push_back(i);
  std::map<int, std::vector<uint32_t>> by_batch;
  for (size_t p = 0; p < r.t.posts().size(); ++p) {
    EXPECT_GE(r.t.posts()[p].batch, 0) << "post " << p << " outside every batch";
    by_batch[r.t.posts()[p].batch].push_back(comm_ops.at(p));
  }
  std::vector<std::vector<uint32_t>> out;
  out.reserve(by_batch.size());
  for (auto& [b, ops] : by_batch) out.push_back(ops);
  return out;
}

TEST(ExecutorStreamOrderTest, RingStepsGoAsOneSendAndOneReceivePerBatch) {
  const int ranks = 4, rank = 1;
  const uint64_t count = 64, segment = 4;  // 16 elements a chunk, 4 segments each
  ScriptedRank r(rank, ranks, count, {.stream_ordered = true});
  ScriptedCompute compute(r.t);
  r.ex.setCompute(&compute);
  r.prepare(ringAllreduceSchedule(rank, ranks, count, segment, false));
  r.t.setScript([&](ScriptedTransport& t) { drain(t, compute); });
  ASSERT_TRUE(r.run(core::Deadline::after(std::chrono::seconds(5))).isOk());

  // Posted in schedule order: each post's op index is larger than the one before.
  std::vector<uint32_t> comm_ops;
  for (uint32_t i = 0; i < r.sched.ops.size(); ++i)
    if (r.sched.ops[i].kind == OpKind::kSend || r.sched.ops[i].kind == OpKind::kRecv)
      comm_ops.push_back(i);
  ASSERT_EQ(r.t.posts().size(), comm_ops.size());
  for (size_t p = 0; p < comm_ops.size(); ++p) {
    const Op& o = r.sched.ops[comm_ops[p]];
    EXPECT_EQ(r.t.posts()[p].dir == Dir::kSend, o.kind == OpKind::kSend) << p;
    EXPECT_EQ(r.t.posts()[p].scheduleTag(), o.tag) << p;
  }
  const auto batches = batchesOf(r);
  // A step's send waits for the step before (its receive, or the reduction of it), so no batch
  // holds two steps: at least 2 (n - 1) batches, each of sends to the next rank matched by as
  // many receives from the one before (the step's segments).
  EXPECT_GE(batches.size(), static_cast<size_t>(2) * (ranks - 1));
  for (const auto& b : batches) {
    int sends = 0, recvs = 0;
    for (uint32_t op : b) {
      const Op& o = r.sched.ops[op];
      sends += o.kind == OpKind::kSend && o.peer == (rank + 1) % ranks;
      recvs += o.kind == OpKind::kRecv && o.peer == (rank + ranks - 1) % ranks;
      for (uint32_t k = 0; k < o.dep_count; ++k)
        for (uint32_t other : b)
          EXPECT_NE(r.sched.deps[o.dep_begin + k], other)
              << "op " << op << " shares a batch with op " << other << ", which it waits for";
    }
    EXPECT_GE(sends, 1);
    EXPECT_EQ(sends, recvs);
    EXPECT_EQ(sends + recvs, static_cast<int>(b.size())) << "a message to another peer";
  }
  // Batches do not nest, and every one closes.
  int open = 0;
  for (const auto& e : r.t.events()) {
    if (e.kind == EventKind::kBeginBatch) ++open;
    if (e.kind == EventKind::kEndBatch) --open;
    EXPECT_LE(open, 1) << "batches do not nest";
  }
  EXPECT_EQ(open, 0);
}

// The ring at rank 1 of 4 on a table of `slots` requests, the stream finishing everything at
// each wait or one item per wait; its batches (the run's status in `s`).
std::vector<std::vector<uint32_t>> ringBatches(uint32_t slots, uint64_t segment, bool one,
                                               core::Status& s) {
  ScriptedRank r(1, 4, 64, {.stream_ordered = true, .request_slots = slots});
  ScriptedCompute compute(r.t);
  r.ex.setCompute(&compute);
  r.prepare(ringAllreduceSchedule(1, 4, 64, segment, false));
  r.t.setScript([&](ScriptedTransport& t) { drain(t, compute, one); });
  s = r.run(core::Deadline::after(std::chrono::seconds(5)));
  return batchesOf(r);
}

// A batch holds at most half the request table; waiting for room happens between batches, so
// when requests finish does not move a cut (ranks that cut differently would deadlock NCCL).
TEST(ExecutorStreamOrderTest, BatchesAreCutTheSameWhateverFinishedWhen) {
  core::Status all, one;
  const auto at_once = ringBatches(16, 4, false, all);  // batches of 8: the whole limit
  const auto slowly = ringBatches(16, 4, true, one);
  ASSERT_TRUE(all.isOk()) << all.toString();
  ASSERT_TRUE(one.isOk()) << one.toString();
  EXPECT_EQ(at_once, slowly);
}

// The all-gather's steps hold 8 segments each, 16 messages, past the 8 of a 16-slot table: the
// run stops with the reason before posting that batch, and every batch posted kept the bound.
TEST(ExecutorStreamOrderTest, AStepLargerThanABatchMayBeIsRefusedBeforeItIsPosted) {
  core::Status s;
  const auto batches = ringBatches(16, 2, false, s);
  EXPECT_EQ(s.code(), core::Code::kUnsupported) << s.toString();
  EXPECT_NE(s.message().find("16 messages"), std::string::npos) << s.toString();
  for (const auto& b : batches) EXPECT_LE(b.size(), 8u);
}

}  // namespace
}  // namespace ccscope::collectives
