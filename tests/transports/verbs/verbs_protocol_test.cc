// The verbs protocol through the fake fabric: eager and rendezvous on both sides of the
// threshold, credits, tag checks on both sides, cancellation, async events.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "tests/transports/verbs/verbs_pair.h"
#include "transports/verbs/verbs_wire.h"

namespace ccscope::transports::verbs::fake {
namespace {

struct Buffers {
  std::vector<char> mem[2];
  Registration reg[2];
};

Buffers registerBoth(Pair& p, size_t bytes) {
  Buffers b;
  for (int r = 0; r < 2; ++r) {
    b.mem[r].assign(bytes, 0);
    auto reg = p.t[r]->registerMemory(b.mem[r].data(), bytes);
    EXPECT_TRUE(reg.isOk());
    b.reg[r] = std::move(*reg);
  }
  return b;
}

void connectOrFail(Pair& p) {
  auto [a, b] = p.connect();
  ASSERT_TRUE(a.isOk()) << a.toString();
  ASSERT_TRUE(b.isOk()) << b.toString();
}

class VerbsThresholdTest : public ::testing::TestWithParam<size_t> {};

TEST_P(VerbsThresholdTest, MessageArrivesIntactByTheRightPath) {
  const size_t len = GetParam();
  Pair p;
  connectOrFail(p);
  Buffers b = registerBoth(p, len + 16);
  for (size_t i = 0; i < len; ++i) b.mem[0][i] = static_cast<char>(i * 7 + 3);
  auto r = p.t[1]->postRecv(0, 0x12, b.reg[1].region(), 0, len + 16);
  auto s = p.t[0]->postSend(1, 0x12, b.reg[0].region(), 0, len);
  ASSERT_TRUE(r.isOk() && s.isOk());
  ASSERT_TRUE(p.drive([&] { return p.t[0]->test(*s) && p.t[1]->test(*r); }));
  EXPECT_TRUE(p.t[0]->wait(*s, core::Deadline::afterSeconds(1)).isOk());
  EXPECT_EQ(p.t[1]->requests().at(*r).bytes, len);
  EXPECT_TRUE(p.t[1]->wait(*r, core::Deadline::afterSeconds(1)).isOk());
  EXPECT_TRUE(std::equal(b.mem[0].begin(), b.mem[0].begin() + len, b.mem[1].begin()));
  EXPECT_EQ(p.fabric.writes, len > kEagerMaxBytes ? 1 : 0);
  EXPECT_EQ(p.fabric.overruns, 0);
}

INSTANTIATE_TEST_SUITE_P(Sizes, VerbsThresholdTest,
                         ::testing::Values(size_t{0}, size_t{1}, kEagerMaxBytes, kEagerMaxBytes + 1,
                                           size_t{1} << 20));

TEST(VerbsCreditTest, SenderStopsAtZeroCreditsAndResumes) {
  Pair p;
  connectOrFail(p);
  const uint32_t n = 3 * kRingSlots;
  Buffers b = registerBoth(p, size_t{n} * 8);
  std::vector<Request> sends;
  for (uint32_t i = 0; i < n; ++i) {
    std::memcpy(&b.mem[0][size_t{i} * 8], &i, sizeof i);
    sends.push_back(*p.t[0]->postSend(1, i, b.reg[0].region(), size_t{i} * 8, 8));
  }
  p.drive([] { return false; }, 200);
  // No receive is posted: the ring holds what credits allowed, the rest waits at the sender.
  EXPECT_LE(p.fabric.sends, static_cast<int>(kRingSlots));
  EXPECT_FALSE(p.t[0]->test(sends.back()));
  std::vector<Request> recvs;
  for (uint32_t i = 0; i < n; ++i)
    recvs.push_back(*p.t[1]->postRecv(0, i, b.reg[1].region(), size_t{i} * 8, 8));
  ASSERT_TRUE(p.drive([&] { return p.t[1]->test(recvs.back()) && p.t[0]->test(sends.back()); }));
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_TRUE(p.t[0]->wait(sends[i], core::Deadline::afterSeconds(1)).isOk());
    EXPECT_TRUE(p.t[1]->wait(recvs[i], core::Deadline::afterSeconds(1)).isOk());
    uint32_t got = 0;
    std::memcpy(&got, &b.mem[1][size_t{i} * 8], sizeof got);
    EXPECT_EQ(got, i);
  }
  EXPECT_EQ(p.fabric.overruns, 0);
}

class VerbsTagTest : public ::testing::TestWithParam<size_t> {};

TEST_P(VerbsTagTest, MismatchFailsBothSidesWithOneSentence) {
  const size_t len = GetParam();
  Pair p;
  connectOrFail(p);
  Buffers b = registerBoth(p, len);
  auto r = p.t[1]->postRecv(0, 0x6, b.reg[1].region(), 0, len);
  auto pending = p.t[0]->postRecv(1, 0x9, b.reg[0].region(), 0, 1);  // rank 0's side of the pair
  auto s = p.t[0]->postSend(1, 0x5, b.reg[0].region(), 0, len);
  ASSERT_TRUE(r.isOk() && s.isOk() && pending.isOk());
  ASSERT_TRUE(p.drive([&] { return p.t[1]->test(*r) && p.t[0]->test(*pending); }));
  const std::string want =
      "rank 1 expected tag 0x6 from rank 0 but got 0x5: ranks disagree on the collective";
  EXPECT_NE(p.t[1]->wait(*r, core::Deadline::afterSeconds(1)).message().find(want),
            std::string::npos);
  EXPECT_NE(p.t[0]->wait(*pending, core::Deadline::afterSeconds(1)).message().find(want),
            std::string::npos);
  EXPECT_EQ(p.t[1]->requests().peerError(0).message(), want);
  EXPECT_EQ(p.t[0]->requests().peerError(1).message(), want);
  EXPECT_EQ(p.t[0]->requests().peerError(1).code(), core::Code::kRemoteError);
}

INSTANTIATE_TEST_SUITE_P(EagerAndRendezvous, VerbsTagTest,
                         ::testing::Values(size_t{64}, size_t{64} << 10));

TEST(VerbsCancelTest, CancelledReceiveSwallowsItsLateMessageOrStepsAside) {
  Pair p;
  connectOrFail(p);
  Buffers b = registerBoth(p, 64);
  b.mem[0][0] = 'a';
  b.mem[0][1] = 'b';
  auto probe = p.t[1]->postRecv(0, 0x1, b.reg[1].region(), 0, 8);
  p.t[1]->cancel(*probe);
  auto next = p.t[1]->postRecv(0, 0x2, b.reg[1].region(), 8, 8);
  auto late = p.t[0]->postSend(1, 0x1, b.reg[0].region(), 0, 1);  // swallowed
  auto real = p.t[0]->postSend(1, 0x2, b.reg[0].region(), 1, 1);  // matches `next`
  ASSERT_TRUE(p.drive([&] { return p.t[1]->test(*next); }));
  EXPECT_TRUE(p.t[1]->wait(*next, core::Deadline::afterSeconds(1)).isOk());
  EXPECT_EQ(b.mem[1][8], 'b');
  EXPECT_EQ(b.mem[1][0], 0);  // the cancelled receive was never written
  auto aside = p.t[1]->postRecv(0, 0x3, b.reg[1].region(), 0, 8);
  p.t[1]->cancel(*aside);
  auto third = p.t[1]->postRecv(0, 0x4, b.reg[1].region(), 16, 8);
  auto s4 = p.t[0]->postSend(1, 0x4, b.reg[0].region(), 0, 1);  // the sink steps aside
  ASSERT_TRUE(p.drive([&] { return p.t[1]->test(*third); }));
  EXPECT_TRUE(p.t[1]->wait(*third, core::Deadline::afterSeconds(1)).isOk());
  EXPECT_EQ(b.mem[1][16], 'a');
  for (auto* q : {&late, &real, &s4})
    EXPECT_TRUE(p.t[0]->wait(**q, core::Deadline::afterSeconds(1)).isOk());
}

TEST(VerbsCancelTest, QueuedSendIsWithdrawnAndAdvertisedReceiveAbortsThePeer) {
  Pair p;
  connectOrFail(p);
  const size_t big = size_t{64} << 10;
  Buffers b = registerBoth(p, 2 * big);
  auto large = p.t[0]->postSend(1, 0x1, b.reg[0].region(), 0, big);  // waits for an advert
  auto queued = p.t[0]->postSend(1, 0x2, b.reg[0].region(), big, 8);
  p.drive([] { return false; }, 50);
  p.t[0]->cancel(*queued);  // never left: withdrawn, the peer never sees it
  EXPECT_FALSE(p.t[0]->requests().peerError(1).code() != core::Code::kOk);
  auto r1 = p.t[1]->postRecv(0, 0x1, b.reg[1].region(), 0, big);
  ASSERT_TRUE(p.drive([&] { return p.t[0]->test(*large) && p.t[1]->test(*r1); }));
  EXPECT_TRUE(p.t[0]->wait(*large, core::Deadline::afterSeconds(1)).isOk());
  EXPECT_TRUE(p.t[1]->wait(*r1, core::Deadline::afterSeconds(1)).isOk());
  auto exposed = p.t[1]->postRecv(0, 0x3, b.reg[1].region(), big, big);
  p.drive([] { return false; }, 20);
  p.t[1]->cancel(*exposed);
  EXPECT_EQ(p.t[1]->requests().peerError(0).code(), core::Code::kAborted);
  ASSERT_TRUE(p.drive([&] { return p.t[0]->requests().peerError(1).code() != core::Code::kOk; }));
  EXPECT_EQ(p.t[0]->requests().peerError(1).code(), core::Code::kAborted);
}

TEST(VerbsAsyncEventTest, PortErrorFailsPendingRequestsVisibly) {
  Pair p;
  connectOrFail(p);
  Buffers b = registerBoth(p, 64);
  auto r = p.t[0]->postRecv(1, 0x1, b.reg[0].region(), 0, 8);
  p.fabric.injectAsync(IBV_EVENT_PORT_ERR, 0);
  ASSERT_TRUE(p.drive([&] { return p.t[0]->test(*r); }, 2'000'000));
  core::Status s = p.t[0]->wait(*r, core::Deadline::afterSeconds(1));
  EXPECT_NE(s.message().find("async event IBV_EVENT_PORT_ERR on fake0:1"), std::string::npos)
      << s.message();
  EXPECT_EQ(s.layer(), core::Layer::kRdma);
}

}  // namespace
}  // namespace ccscope::transports::verbs::fake
