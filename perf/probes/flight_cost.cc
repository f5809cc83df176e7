// What one operation costs the flight recorder, measured alone (the end-to-end on/off comparison
// of `perf/compare.sh flight` cannot resolve a few nanoseconds on a noisy shared VM): the calls
// the executor makes for an 8 B recursive-doubling allreduce on 2 ranks (begin, one blocking
// wait: whom it waits on, done waiting, progress; end), with the bookkeeping clock ticking as it
// does in `bench` and without.
// Usage: ccscope-flight-cost [OPERATIONS=10000000]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "core/flight_record.h"

namespace {

double nsPerOp(long n) {
  ccscope::core::FlightRecorder rec;
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) {
    ccscope::core::FlightEntry& e = rec.begin("allreduce", "recursive_doubling", "float", 8, 4);
    e.waitingOn(1, 8, 0);
    e.doneWaiting();
    e.progress(4, ccscope::core::TickClock::now());
    ccscope::core::FlightRecorder::end(e, true);
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
}

}  // namespace

int main(int argc, char** argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 10'000'000;
  if (n <= 0) {
    std::fprintf(stderr, "usage: ccscope-flight-cost [OPERATIONS > 0]\n");
    return 2;
  }
  double unticked = nsPerOp(n);
  ccscope::core::TickClock::tick();  // as the wait sampler does during a sweep
  double ticked = nsPerOp(n);
  ccscope::core::TickClock::stop();
  std::printf(
      "flight recorder, ns per operation: %.1f with the ticking clock (bench), %.1f "
      "reading the coarse clock\n",
      ticked, unticked);
  return 0;
}
