// The real verbs transport between two rank processes; skips where there is no RDMA device.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <vector>

#include "tests/transports/rank_runner.h"
#include "transports/verbs/verbs_transport.h"

namespace ccscope::transports {
namespace {

bool haveDevice() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list) ibv_free_device_list(list);
  return list && n > 0;
}

TEST(VerbsEndToEndTest, NoDeviceIsReportedBeforeRanksStart) {
  if (haveDevice()) GTEST_SKIP() << "an RDMA device is present";
  core::Status s = transportUsable("verbs");
  EXPECT_EQ(s.code(), core::Code::kUnavailable);
  EXPECT_EQ(s.layer(), core::Layer::kRdma);
}

TEST(VerbsEndToEndTest, EagerAndRendezvousBetweenTwoRanks) {
  if (!haveDevice()) GTEST_SKIP() << "no RDMA device";
  const std::string failures =
      conformance::runRanks(conformance::localRanks("verbs", 2), [](conformance::RankContext& ctx) {
        const int peer = 1 - ctx.rank;
        for (size_t len : {size_t{0}, size_t{100}, size_t{1} << 20}) {
          std::vector<char> out(len + 1), in(len + 1);
          conformance::fillPattern(out.data(), len, static_cast<size_t>(ctx.rank) * 31 + len);
          auto ro = ctx.transport.registerMemory(out.data(), out.size());
          auto ri = ctx.transport.registerMemory(in.data(), in.size());
          RANK_CHECK(ctx, ro.isOk() && ri.isOk(), "registerMemory");
          auto r = ctx.transport.postRecv(peer, 7, ri->region(), 0, len);
          auto s = ctx.transport.postSend(peer, 7, ro->region(), 0, len);
          RANK_CHECK(ctx, r.isOk() && s.isOk(), "post");
          core::Status ws = ctx.transport.wait(*s, ctx.deadline);
          core::Status wr = ctx.transport.wait(*r, ctx.deadline);
          RANK_CHECK(ctx, ws.isOk() && wr.isOk(), ws.toString() + " " + wr.toString());
          RANK_CHECK(
              ctx,
              conformance::firstMismatch(in.data(), len, static_cast<size_t>(peer) * 31 + len) < 0,
              "data");
        }
        return 0;
      });
  EXPECT_EQ(failures, "");
}

}  // namespace
}  // namespace ccscope::transports
