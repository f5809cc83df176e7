#include "app/model_fit_record.h"

#include <gtest/gtest.h>

namespace ccscope::app {
namespace {

TEST(ModelFitRecordTest, RoundTripsEveryFieldPredictReads) {
  FitRecord r;
  r.transport = "tcp";
  r.params.alpha = {5.5e-6, 12e-6};
  r.params.beta = {1e-9 / 6.5, 1e-9 / 1.25};
  r.params.gamma = 1e-9 / 20;
  r.params.delta = 1e-9 / 11;
  r.fitted = {true, true, false, false, true, true};
  r.llc_bytes = 16 << 20;
  r.r2 = 0.98;
  r.max_abs_error = 0.4;
  r.rows = 80;
  r.cores = 2;
  r.one_machine = true;
  r.min_segment_bytes = 256 << 10;
  const nlohmann::json j = fitRecordJson(r);
  EXPECT_EQ(j["type"], "model_fit");
  EXPECT_NEAR(j["bw_intra_gbps"].get<double>(), 6.5, 1e-9);
  const FitRecord back = fitRecordFromJson(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back.transport, "tcp");
  for (int c = 0; c < model::kHopClasses; ++c) {
    EXPECT_NEAR(back.params.alpha[c], r.params.alpha[c], 1e-15);
    EXPECT_NEAR(back.params.beta[c], r.params.beta[c], 1e-18);
  }
  EXPECT_NEAR(back.params.gamma, r.params.gamma, 1e-18);
  EXPECT_NEAR(back.params.delta, r.params.delta, 1e-18);
  EXPECT_EQ(back.fitted, r.fitted);
  EXPECT_EQ(back.llc_bytes, r.llc_bytes);
  EXPECT_EQ(back.rows, 80u);
  EXPECT_EQ(back.cores, 2);
  EXPECT_TRUE(back.one_machine);
  EXPECT_EQ(back.min_segment_bytes, r.min_segment_bytes);
}

TEST(ModelFitRecordTest, AZeroBandwidthStaysNoneAndMissingFieldsKeepDefaults) {
  const FitRecord r = fitRecordFromJson({{"type", "model_fit"}, {"bw_inter_gbps", 0}});
  EXPECT_EQ(r.params.beta[model::kInter], 0);
  EXPECT_EQ(r.cores, 0);
  EXPECT_FALSE(r.one_machine);
  EXPECT_EQ(r.min_segment_bytes, uint64_t{64} << 10);
}

}  // namespace
}  // namespace ccscope::app
