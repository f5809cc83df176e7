// The sweep driver's order of work, on one rank: a backend that only counts what it is asked to
// run stands in for a transport (the narrow seam: what is tested is the harness's schedule of
// warm-ups, measurements and turns, not a collective).
#include "bench/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ccscope::bench {
namespace {

using core::Status;

class CountingBackend : public collectives::CollectiveBackend {
 public:
  CountingBackend(std::string name, std::chrono::microseconds per_run)
      : name_(std::move(name)), per_run_(per_run) {}
  std::string algorithm() const override { return name_; }
  std::string transport() const override { return "none"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status allocate(size_t max_bytes, core::HostPages) override {
    buf_.assign(2 * max_bytes + 64, 0);
    return Status::ok();
  }
  char* sendBuffer() override { return buf_.data(); }
  char* recvBuffer() override { return buf_.data() + buf_.size() / 2; }
  Status prepare(const collectives::OpConfig& op) override {
    count_ = op.count;
    return Status::ok();
  }
  Status run(bool, core::Deadline) override {
    runs_.push_back(count_);
    std::this_thread::sleep_for(per_run_);
    return Status::ok();
  }
  Status barrier(core::Deadline) override { return Status::ok(); }
  Status maxDoubles(std::span<double>, core::Deadline) override { return Status::ok(); }
  Status sumInts(std::span<int64_t>, core::Deadline) override { return Status::ok(); }

  // How many runs were made at each prepared count, in order.
  std::vector<std::pair<uint64_t, int>> runsPerCount() const {
    std::vector<std::pair<uint64_t, int>> out;
    for (uint64_t c : runs_) {
      if (out.empty() || out.back().first != c) out.push_back({c, 0});
      ++out.back().second;
    }
    return out;
  }

 private:
  std::string name_;
  std::chrono::microseconds per_run_;
  std::vector<char> buf_;
  uint64_t count_ = 0;
  std::vector<uint64_t> runs_;
};

class OrderSink : public reports::ResultSink {
 public:
  void onMeasurement(const reports::Measurement& m) override {
    rows.push_back(m.requested_algorithm + "@" + std::to_string(m.bytes) +
                   (m.in_place ? "ip" : ""));
  }
  std::vector<std::string> rows;
};

BenchConfig smallSweep(int warmup) {
  BenchConfig c;
  c.collective = collectives::Collective::kAllreduce;
  c.min_bytes = 1024;
  c.max_bytes = 4096;
  c.factor = 2;
  c.iters = 3;
  c.warmup = warmup;
  c.checks = 0;
  return c;
}

// Per size and placement: -w warm-up runs, -n back-to-back runs, -n barrier-separated runs.
int runsPerSize(const BenchConfig& c) { return 2 * (c.warmup + 2 * c.iters); }

TEST(SweepTest, TheFirstSizeIsWarmedUpForATenthOfASecondTheOthersByWarmupOnly) {
  BenchConfig cfg = smallSweep(2);
  CountingBackend b("ring", std::chrono::microseconds(1000));
  OrderSink sink;
  auto t0 = std::chrono::steady_clock::now();
  auto summary = runSweep(cfg, {&b}, sink);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(summary.isOk()) << summary.status().toString();
  auto per = b.runsPerCount();
  ASSERT_EQ(per.size(), 3u);  // 1, 2 and 4 KiB
  // Batches of -w runs of >= 1 ms each until 0.1 s have passed (about 50 batches here; however
  // slow the machine, at least one, and the whole sweep then took at least 0.1 s).
  int extra = per[0].second - runsPerSize(cfg);
  EXPECT_GE(extra, cfg.warmup);
  EXPECT_EQ(extra % cfg.warmup, 0);
  EXPECT_LE(extra, 100 * cfg.warmup);  // kColdStartBatches at most
  EXPECT_GE(seconds, 0.1);
  EXPECT_EQ(per[1].second, runsPerSize(cfg));
  EXPECT_EQ(per[2].second, runsPerSize(cfg));
  EXPECT_EQ(summary->rows, 6);
}

TEST(SweepTest, NoWarmupMeansNoColdStartEither) {
  BenchConfig cfg = smallSweep(0);
  CountingBackend b("ring", std::chrono::microseconds(0));
  OrderSink sink;
  ASSERT_TRUE(runSweep(cfg, {&b}, sink).isOk());
  for (const auto& [count, runs] : b.runsPerCount()) EXPECT_EQ(runs, runsPerSize(cfg)) << count;
}

// Each size's turns start one backend further on than the last size's, from cfg.first_turn.
TEST(SweepTest, SeveralBackendsTakeTurnsAtEachSizeStartingOneFurtherOnEachTime) {
  BenchConfig cfg = smallSweep(1);
  cfg.first_turn = 0;
  CountingBackend a("ring", std::chrono::microseconds(0)), t("tree", std::chrono::microseconds(0));
  OrderSink sink;
  auto summary = runSweep(cfg, {&a, &t}, sink);
  ASSERT_TRUE(summary.isOk()) << summary.status().toString();
  EXPECT_EQ(sink.rows,
            (std::vector<std::string>{"ring@1024", "ring@1024ip", "tree@1024", "tree@1024ip",
                                      "tree@2048", "tree@2048ip", "ring@2048", "ring@2048ip",
                                      "ring@4096", "ring@4096ip", "tree@4096", "tree@4096ip"}));
  EXPECT_EQ(summary->rows, 12);
  // Each backend gets its own cold start at the first size.
  EXPECT_GT(a.runsPerCount()[0].second, runsPerSize(cfg));
  EXPECT_GT(t.runsPerCount()[0].second, runsPerSize(cfg));
}

// Three backends starting at the second: no backend takes the last turn at two sizes running, and
// unset (-1), the start is drawn, yet every backend still measures every size once.
TEST(SweepTest, TurnsRotateSoNoBackendIsAlwaysLast) {
  BenchConfig cfg = smallSweep(0);
  cfg.in_place = false;
  cfg.first_turn = 1;
  CountingBackend a("a", std::chrono::microseconds(0)), b("b", std::chrono::microseconds(0)),
      c("c", std::chrono::microseconds(0));
  OrderSink sink;
  ASSERT_TRUE(runSweep(cfg, {&a, &b, &c}, sink).isOk());
  EXPECT_EQ(sink.rows, (std::vector<std::string>{"b@1024", "c@1024", "a@1024", "c@2048", "a@2048",
                                                 "b@2048", "a@4096", "b@4096", "c@4096"}));
  cfg.first_turn = -1;
  OrderSink drawn;
  ASSERT_TRUE(runSweep(cfg, {&a, &b, &c}, drawn).isOk());
  ASSERT_EQ(drawn.rows.size(), 9u);
  for (size_t size = 0; size < 3; ++size) {
    std::vector<std::string> turns(drawn.rows.begin() + 3 * size,
                                   drawn.rows.begin() + 3 * size + 3);
    std::sort(turns.begin(), turns.end());
    std::string bytes = std::to_string(1024 << size);
    EXPECT_EQ(turns, (std::vector<std::string>{"a@" + bytes, "b@" + bytes, "c@" + bytes}));
  }
}

// --placement out / in: only that half is warmed up, timed and reported.
TEST(SweepTest, PlacementMeasuresOnlyTheHalfAskedFor) {
  for (bool out : {true, false}) {
    BenchConfig cfg = smallSweep(0);
    cfg.out_of_place = out;
    cfg.in_place = !out;
    CountingBackend b("ring", std::chrono::microseconds(0));
    OrderSink sink;
    auto summary = runSweep(cfg, {&b}, sink);
    ASSERT_TRUE(summary.isOk()) << summary.status().toString();
    std::string ip = out ? "" : "ip";
    EXPECT_EQ(sink.rows,
              (std::vector<std::string>{"ring@1024" + ip, "ring@2048" + ip, "ring@4096" + ip}));
    EXPECT_EQ(summary->rows, 3);
    for (const auto& [count, runs] : b.runsPerCount())
      EXPECT_EQ(runs, runsPerSize(cfg) / 2) << count;
  }
}

}  // namespace
}  // namespace ccscope::bench
