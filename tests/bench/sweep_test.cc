// The sweep driver's order of work, on one rank: a backend that only counts what it is asked to
// run stands in for a transport (the narrow seam: what is tested is the harness's schedule of
// warm-ups, measurements and turns, not a collective).
#include "bench/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
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
    ++allocations;
    buf_.assign(2 * max_bytes + 64, 0);
    buf = buf_.data();
    return Status::ok();
  }
  // Shares another CountingBackend's buffer when `can_share` (as backends over one transport do).
  bool shareBuffers(CollectiveBackend& other, size_t max_bytes) override {
    auto* o = dynamic_cast<CountingBackend*>(&other);
    if (!can_share || !o || o->buf_.size() < 2 * max_bytes + 64) return false;
    buf = o->buf;
    shared_size_ = o->buf_.size();
    return true;
  }
  char* sendBuffer() override { return buf; }
  char* recvBuffer() override { return buf + (buf_.empty() ? shared_size_ : buf_.size()) / 2; }
  bool can_share = false;
  int allocations = 0;
  char* buf = nullptr;
  Status prepare(const collectives::OpConfig& op) override {
    count_ = op.count;
    return Status::ok();
  }
  Status run(bool, core::Deadline) override {
    runs_.push_back(count_);
    std::string turn = name_ + "@" + std::to_string(count_);
    if (turns && (turns->empty() || turns->back() != turn)) {
      turns->push_back(turn);
      if (turn_runs) turn_runs->push_back(0);
    }
    if (turns && turn_runs) ++turn_runs->back();
    if (on_run) on_run();
    std::this_thread::sleep_for(per_run_);
    return Status::ok();
  }
  void setPerRun(std::chrono::microseconds d) { per_run_ = d; }
  // Shared by the backends of a sweep: "name@count" at each change of backend or count (a turn,
  // or two of one backend back to back), and how many runs each made.
  std::vector<std::string>* turns = nullptr;
  std::vector<int>* turn_runs = nullptr;
  std::function<void()> on_run;
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
  size_t shared_size_ = 0;
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

// Each size is measured in two legs: the turns in order, then reversed (ABBA), each backend
// timing half the iterations in each; each size's order starts one backend further on than the
// last size's, from cfg.first_turn. The last turn of the first leg and the first of the second
// are the same backend's, back to back. A row is written when its backend's second leg ends.
TEST(SweepTest, SeveralBackendsTakeTurnsForwardThenBackStartingOneFurtherAtEachSize) {
  BenchConfig cfg = smallSweep(1);
  cfg.first_turn = 0;
  CountingBackend a("ring", std::chrono::microseconds(0)), t("tree", std::chrono::microseconds(0));
  std::vector<std::string> turns;
  std::vector<int> runs;
  a.turns = t.turns = &turns;
  a.turn_runs = t.turn_runs = &runs;
  OrderSink sink;
  auto summary = runSweep(cfg, {&a, &t}, sink);
  ASSERT_TRUE(summary.isOk()) << summary.status().toString();
  // Counts are floats: 1024 B is 256 elements.
  EXPECT_EQ(turns, (std::vector<std::string>{"ring@256", "tree@256", "ring@256",  // r t | t r
                                             "tree@512", "ring@512", "tree@512",  // t r | r t
                                             "ring@1024", "tree@1024", "ring@1024"}));
  EXPECT_EQ(sink.rows,
            (std::vector<std::string>{"tree@1024", "tree@1024ip", "ring@1024", "ring@1024ip",
                                      "ring@2048", "ring@2048ip", "tree@2048", "tree@2048ip",
                                      "tree@4096", "tree@4096ip", "ring@4096", "ring@4096ip"}));
  EXPECT_EQ(summary->rows, 12);
  // Per leg and placement: -w warm-up runs, then of -n 3 iterations of each kind (back-to-back,
  // barrier-separated) 2 in the first leg and 1 in the second.
  ASSERT_EQ(runs.size(), 9u);
  const int first_leg = 2 * (cfg.warmup + 2 * 2), second_leg = 2 * (cfg.warmup + 2 * 1);
  EXPECT_GT(runs[0], first_leg);               // ring's cold start comes first
  EXPECT_GT(runs[1], first_leg + second_leg);  // tree's too
  EXPECT_EQ(runs[2], second_leg);
  EXPECT_EQ(runs[3], first_leg);
  EXPECT_EQ(runs[4], first_leg + second_leg);
  EXPECT_EQ(runs[5], second_leg);
}

// Three backends starting at the second: no backend takes the first or last turn at two sizes
// running, and unset (-1), the start is drawn, yet every size's turns still go forward over
// every backend once and back again.
TEST(SweepTest, TurnsRotateSoNoBackendIsAlwaysAtTheEnds) {
  BenchConfig cfg = smallSweep(0);
  cfg.in_place = false;
  cfg.first_turn = 1;
  CountingBackend a("a", std::chrono::microseconds(0)), b("b", std::chrono::microseconds(0)),
      c("c", std::chrono::microseconds(0));
  std::vector<std::string> turns;
  a.turns = b.turns = c.turns = &turns;
  OrderSink sink;
  ASSERT_TRUE(runSweep(cfg, {&a, &b, &c}, sink).isOk());
  EXPECT_EQ(turns, (std::vector<std::string>{"b@256", "c@256", "a@256", "c@256", "b@256", "c@512",
                                             "a@512", "b@512", "a@512", "c@512", "a@1024", "b@1024",
                                             "c@1024", "b@1024", "a@1024"}));
  EXPECT_EQ(sink.rows, (std::vector<std::string>{"a@1024", "c@1024", "b@1024", "b@2048", "a@2048",
                                                 "c@2048", "c@4096", "b@4096", "a@4096"}));
  cfg.first_turn = -1;
  turns.clear();
  OrderSink drawn;
  ASSERT_TRUE(runSweep(cfg, {&a, &b, &c}, drawn).isOk());
  ASSERT_EQ(drawn.rows.size(), 9u);
  ASSERT_EQ(turns.size(), 15u);
  for (std::ptrdiff_t size = 0; size < 3; ++size) {
    std::vector<std::string> point(turns.begin() + 5 * size, turns.begin() + 5 * size + 5);
    EXPECT_TRUE(std::equal(point.begin(), point.end(), point.rbegin())) << "size " << size;
    std::vector<std::string> forward(point.begin(), point.begin() + 3);
    std::sort(forward.begin(), forward.end());
    std::string count = std::to_string(256 << size);
    EXPECT_EQ(forward, (std::vector<std::string>{"a@" + count, "b@" + count, "c@" + count}));
  }
}

// A row holds both legs: here the backend is fast in its first leg and slow in its second (the
// other backend, whose turns come between, slows it down). Its latency samples span both, and
// its back-to-back mean is over all -n iterations.
TEST(SweepTest, ARowCombinesItsEarlyAndLateLeg) {
  constexpr auto kSlow = std::chrono::milliseconds(5);
  BenchConfig cfg = smallSweep(0);
  cfg.in_place = false;
  cfg.max_bytes = cfg.min_bytes;
  cfg.iters = 4;
  cfg.first_turn = 0;
  CountingBackend x("x", std::chrono::microseconds(0)), y("y", std::chrono::microseconds(0));
  y.on_run = [&] { x.setPerRun(kSlow); };
  struct Rows : reports::ResultSink {
    void onMeasurement(const reports::Measurement& m) override { all.push_back(m); }
    std::vector<reports::Measurement> all;
  } rows;
  ASSERT_TRUE(runSweep(cfg, {&x, &y}, rows).isOk());
  ASSERT_EQ(rows.all.size(), 2u);
  const reports::Measurement& mx = rows.all[1];  // y's second leg ends first
  ASSERT_EQ(mx.requested_algorithm, "x");
  const double slow_us = std::chrono::duration<double, std::micro>(kSlow).count();
  EXPECT_LT(mx.lat.min, slow_us / 2);  // a first-leg sample
  EXPECT_GE(mx.lat.max, slow_us);      // a second-leg sample
  // Two fast and two slow back-to-back runs, over four iterations.
  EXPECT_GE(mx.time_us, slow_us / 2);
  EXPECT_LT(mx.time_us, slow_us);
}

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

// The backends of one sweep take turns, so the first allocates and the others share its
// buffers; one that cannot share (another memory kind or transport) allocates its own.
TEST(SweepTest, BackendsThatCanShareTheFirstOnesBuffersAllocateNone) {
  BenchConfig cfg = smallSweep(1);
  CountingBackend a("ring", std::chrono::microseconds(0)), b("tree", std::chrono::microseconds(0)),
      c("native", std::chrono::microseconds(0));
  a.can_share = b.can_share = true;  // c cannot
  OrderSink sink;
  ASSERT_TRUE(runSweep(cfg, {&a, &b, &c}, sink).isOk());
  EXPECT_EQ(a.allocations, 1);
  EXPECT_EQ(b.allocations, 0);
  EXPECT_EQ(c.allocations, 1);
  EXPECT_EQ(b.sendBuffer(), a.sendBuffer());
  EXPECT_NE(c.sendBuffer(), a.sendBuffer());
  EXPECT_EQ(sink.rows.size(), 3u * 3 * 2);  // 3 sizes, 3 backends, both placements
}

}  // namespace
}  // namespace ccscope::bench
