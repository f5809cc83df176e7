// The request table's finished list: each finish reported once, in order, across slot reuse.
#include "transports/common/request_table.h"

#include <gtest/gtest.h>

#include <vector>

namespace ccscope::transports {
namespace {

std::vector<uint32_t> drain(RequestTable& t) {
  std::vector<uint32_t> slots;
  Request r;
  while (t.nextFinished(&r)) slots.push_back(r.slot);
  return slots;
}

TEST(RequestTableTest, FinishesAreReportedOnceInOrder) {
  RequestTable t(0, 2, "test", 8);
  auto a = t.open(Dir::kSend, 1, 1, nullptr, 0);
  auto b = t.open(Dir::kRecv, 1, 2, nullptr, 0);
  ASSERT_TRUE(a.isOk() && b.isOk());
  t.complete(b->slot);
  t.fail(a->slot, core::Status(core::Code::kAborted, "x"));
  EXPECT_EQ(drain(t), (std::vector<uint32_t>{b->slot, a->slot}));
  EXPECT_TRUE(drain(t).empty());
}

// A request released with wait() leaves its entry in the list; reopening the slot must not
// cut the list after it: resetting the link would lose every later finish.
TEST(RequestTableTest, ReusingAListedSlotKeepsLaterFinishes) {
  RequestTable t(0, 2, "test", 8);
  auto a = t.open(Dir::kSend, 1, 1, nullptr, 0);
  auto b = t.open(Dir::kSend, 1, 2, nullptr, 0);
  ASSERT_TRUE(a.isOk() && b.isOk());
  t.complete(a->slot);
  t.complete(b->slot);
  ASSERT_TRUE(t.release(*a).isOk());              // released without the list: its entry is stale
  auto c = t.open(Dir::kSend, 1, 3, nullptr, 0);  // takes a's slot
  ASSERT_TRUE(c.isOk());
  ASSERT_EQ(c->slot, a->slot);
  auto d = t.open(Dir::kSend, 1, 4, nullptr, 0);
  ASSERT_TRUE(d.isOk());
  t.complete(d->slot);
  t.complete(c->slot);
  std::vector<uint32_t> got = drain(t);
  ASSERT_EQ(got.size(), 3u);  // c (through the stale entry, now finished), b, d
  EXPECT_EQ(got[0], c->slot);
  EXPECT_EQ(got[1], b->slot);
  EXPECT_EQ(got[2], d->slot);
}

TEST(RequestTableTest, CancelledRequestsAreNeverReportedAndFreeTheirSlot) {
  RequestTable t(0, 2, "test", 2);
  auto a = t.open(Dir::kRecv, 1, 1, nullptr, 0);
  ASSERT_TRUE(a.isOk());
  t.cancel(*a);
  EXPECT_EQ(t.inUse(), 1u);  // the transport may still match a late message against it
  t.complete(a->slot);
  EXPECT_EQ(t.inUse(), 0u);
  EXPECT_TRUE(drain(t).empty());
}

}  // namespace
}  // namespace ccscope::transports
