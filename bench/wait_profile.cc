#include "bench/wait_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

#include "core/units.h"

namespace ccscope::bench {

using nlohmann::json;

int64_t WaitProfile::blocked(int a) const {
  return std::accumulate(waited_on[a].begin(), waited_on[a].end(), int64_t{0});
}

std::vector<int64_t> WaitProfile::flatten() const {
  std::vector<int64_t> v(running);
  for (const auto& row : waited_on) v.insert(v.end(), row.begin(), row.end());
  return v;
}

WaitProfile WaitProfile::unflatten(int n, const std::vector<int64_t>& v) {
  WaitProfile p(n);
  if (v.size() != static_cast<size_t>(n) * (n + 1)) return p;
  std::copy(v.begin(), v.begin() + n, p.running.begin());
  for (ptrdiff_t a = 0; a < n; ++a)
    std::copy(v.begin() + n + a * n, v.begin() + n + (a + 1) * n, p.waited_on[a].begin());
  return p;
}

StragglerVerdict findStraggler(const WaitProfile& p) {
  StragglerVerdict v;
  const int n = p.ranks;
  if (n < 2) return v;
  // Every rank spends the same wall time in the sweep, so the best-covered rank's sample count
  // is the reference: a rank that was stopped or starved of CPU has fewer samples, and its
  // missing ones count as "not waiting" — it was the one being slow.
  const int64_t ref = *std::max_element(p.running.begin(), p.running.end());
  int64_t all_blocked = 0;
  for (int a = 0; a < n; ++a) all_blocked += p.blocked(a);
  for (int a = 0; a < n; ++a) {
    v.blocked_share.push_back(ref ? static_cast<double>(p.blocked(a)) / ref : 0);
    int64_t on = 0;
    for (int b = 0; b < n; ++b) on += p.waited_on[b][a];
    v.waited_share.push_back(all_blocked ? static_cast<double>(on) / all_blocked : 0);
  }
  if (ref < kMinSamples) return v;
  // The others' median blocked share beside the suspect's: a straggler waits far less.
  auto stands_out = [&](int suspect, double& median) {
    std::vector<double> others;
    for (int a = 0; a < n; ++a)
      if (a != suspect) others.push_back(v.blocked_share[a]);
    std::sort(others.begin(), others.end());
    median = others[others.size() / 2];
    return median >= kMinMedianBlocked && v.blocked_share[suspect] <= kStragglerRatio * median;
  };
  int suspect = static_cast<int>(std::max_element(v.waited_share.begin(), v.waited_share.end()) -
                                 v.waited_share.begin());
  double median = 0;
  if (!stands_out(suspect, median)) {
    // Waits pass along a ring: the stopped rank's neighbour can collect more of the others'
    // waiting than the stopped rank itself. Then the least blocked rank, if it is waited on at
    // least its fair share.
    suspect = static_cast<int>(std::min_element(v.blocked_share.begin(), v.blocked_share.end()) -
                               v.blocked_share.begin());
    if (v.waited_share[suspect] < 1.0 / n || !stands_out(suspect, median)) return v;
  }
  v.rank = suspect;
  v.text = fmt::format(
      "straggler: rank {}: the others spent {:.0f}% of their waiting on it, and it waited in "
      "{:.0f}% "
      "of the sweep against a median of {:.0f}% for the others",
      suspect, 100 * v.waited_share[suspect], 100 * v.blocked_share[suspect], 100 * median);
  return v;
}

json toJson(const WaitProfile& p, const StragglerVerdict& v, const std::string& algorithm,
            const std::vector<std::string>& hosts) {
  json j{{"type", "waits"},
         {"algorithm", algorithm},
         {"ranks", p.ranks},
         {"samples", p.running},
         {"waited_on", p.waited_on},
         {"blocked_share", v.blocked_share},
         {"waited_share", v.waited_share},
         {"straggler", v.rank}};
  if (v.rank >= 0) {
    j["verdict"] = v.text;
    if (v.rank < static_cast<int>(hosts.size())) j["host"] = hosts[v.rank];
  }
  return j;
}

core::Result<std::chrono::microseconds> samplePeriod(int ranks_on_host, int cores) {
  if (const char* v = std::getenv("CCSCOPE_WAIT_SAMPLE_PERIOD")) {
    auto s = core::parseDurationSeconds(v);
    if (!s || *s < 1e-4 || *s > 10)
      return core::Status(
          core::Code::kInvalidArgument,
          fmt::format("CCSCOPE_WAIT_SAMPLE_PERIOD='{}' is not a duration from 0.1ms "
                      "to 10s (5ms, 0.02s)",
                      v));
    return std::chrono::microseconds(std::llround(*s * 1e6));
  }
  const int ranks = std::max(ranks_on_host, 1), usable = std::max(cores, 1);
  return kBaseSamplePeriod * ((ranks + usable - 1) / usable);
}

WaitSampler::WaitSampler(const core::FlightRecorder* rec, int rank, int ranks,
                         std::chrono::microseconds period)
    : rec_(rec), rank_(rank), period_(period), mine_(ranks) {
  core::TickClock::tick();
  thread_ = std::thread([this] { loop(); });
}

void WaitSampler::loop() {
  auto next = std::chrono::steady_clock::now();
  while (!stop_.load(std::memory_order_relaxed)) {
    next += period_;
    // Descheduled for longer than a period: skip the missed samples rather than burst them.
    if (auto now = std::chrono::steady_clock::now(); next < now) next = now + period_;
    std::this_thread::sleep_until(next);
    core::TickClock::tick();
    if (!rec_) continue;
    const uint64_t seq = rec_->latestSeq();
    if (seq == 0) continue;
    const core::FlightEntry& e = rec_->entry(seq);
    if (e.state.load(std::memory_order_acquire) != core::FlightState::kRunning) continue;
    if (core::isHarnessOperation(e)) continue;
    ++mine_.running[rank_];
    const int peer = e.waiting_peer.load(std::memory_order_relaxed);
    if (peer >= 0 && peer < mine_.ranks) ++mine_.waited_on[rank_][peer];
  }
}

WaitProfile WaitSampler::stop() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
  core::TickClock::stop();
  return mine_;
}

}  // namespace ccscope::bench
