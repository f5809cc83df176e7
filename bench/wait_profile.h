// Who waits on whom: a straggler finder that costs the data path nothing. A sampler thread reads
// this rank's flight recorder every few milliseconds: while a collective runs, either the rank
// is blocked waiting on a peer (the entry names it) or it is working. Summed over a sweep and
// over ranks, a straggler stands out as the rank the others wait on while it is itself rarely
// blocked; a slow link as the pair that waits on each other most.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/flight_record.h"
#include "core/status.h"

namespace ccscope::bench {

// Every rank's samples, gathered: rank a was sampled running[a] times inside a collective, of
// which it was blocked on rank b waited_on[a][b] times.
struct WaitProfile {
  int ranks = 0;
  std::vector<int64_t> running;
  std::vector<std::vector<int64_t>> waited_on;

  explicit WaitProfile(int n = 0)
      : ranks(n), running(n, 0), waited_on(n, std::vector<int64_t>(n, 0)) {}
  int64_t blocked(int a) const;
  // Flattened for an elementwise sum over ranks: [running..., waited_on row-major...].
  std::vector<int64_t> flatten() const;
  static WaitProfile unflatten(int n, const std::vector<int64_t>& v);
};

struct StragglerVerdict {
  int rank = -1;                      // -1: none found
  std::string text;                   // one line naming the rank and the numbers behind it
  std::vector<double> blocked_share;  // per rank: blocked samples / the most samples of any rank
  std::vector<double> waited_share;   // per rank: share of everyone's blocked samples spent on it
};

// The suspect is the rank the others spend the largest share of their waiting on. It is named
// when the others wait at least kMinMedianBlocked of the time (median) and it waits at most
// kStragglerRatio of that, over at least kMinSamples samples. When it does not stand out so,
// the least blocked rank is the suspect, provided the others spend at least 1/n of their
// waiting on it. Harness barriers are not sampled:
// rank 0 writing the results there is not a straggler.
inline constexpr int64_t kMinSamples = 50;
inline constexpr double kMinMedianBlocked = 1.0 / 3;
inline constexpr double kStragglerRatio = 0.7;
StragglerVerdict findStraggler(const WaitProfile& p);

// The {"type":"waits"} record of the JSON Lines output.
nlohmann::json toJson(const WaitProfile& p, const StragglerVerdict& v, const std::string& algorithm,
                      const std::vector<std::string>& hosts);

// The sampling period for a rank sharing its host with `ranks_on_host` ranks (itself included)
// on `cores` cores: kBaseSamplePeriod while each rank has a core; oversubscribed, that times
// ceil(ranks/cores), so a host's samplers together wake each core no more often than with a core
// per rank. Every wakeup preempts a rank that is copying, which slows large oversubscribed
// collectives (docs/performance.md, "Flight recorder and wait sampler cost").
// CCSCOPE_WAIT_SAMPLE_PERIOD (a duration: 5ms, 0.02s) overrides it; a bad value is an error.
inline constexpr std::chrono::microseconds kBaseSamplePeriod{5000};
core::Result<std::chrono::microseconds> samplePeriod(int ranks_on_host, int cores);

// Samples `rec` every `period` on its own thread from construction to stop(), and ticks the
// data path's TickClock meanwhile (with rec == nullptr it only ticks).
class WaitSampler {
 public:
  WaitSampler(const core::FlightRecorder* rec, int rank, int ranks,
              std::chrono::microseconds period = kBaseSamplePeriod);
  ~WaitSampler() { stop(); }
  WaitSampler(const WaitSampler&) = delete;
  WaitSampler& operator=(const WaitSampler&) = delete;
  // Stops sampling; returns this rank's row (only the row of `rank` is filled).
  WaitProfile stop();

 private:
  void loop();
  const core::FlightRecorder* rec_;
  int rank_;
  std::chrono::microseconds period_;
  std::atomic<bool> stop_{false};
  WaitProfile mine_;
  std::thread thread_;
};

}  // namespace ccscope::bench
