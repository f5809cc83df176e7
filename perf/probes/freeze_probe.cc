// Host freeze probe: one thread per CPU spins on the monotonic clock and reports every gap longer
// than a threshold. A gap seen by every thread at the same moment is a freeze of the whole VM
// (all vCPUs stopped by the host), not a preempted process. Where the guest kernel reports free
// pages back to the host (virtio-balloon free page reporting, counter in
// /sys/module/page_reporting/parameters/reported_kib), each gap is printed with how much was
// reported since the start, so a freeze can be matched to the reporting that caused it.
// Usage: ccscope-freeze-probe SECONDS [THRESHOLD_MS=4]. Prints one line per gap per thread
// ("gap MS ms at T s on thread I, reported +K KiB") and a summary line:
// "freezes: N seen by all T threads, longest MS ms, M ms in all; reported K KiB".
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "core/deadline.h"

namespace {

constexpr const char* kReportedKib = "/sys/module/page_reporting/parameters/reported_kib";

long reportedKib() {
  std::ifstream f(kReportedKib);
  long v = -1;
  f >> v;
  return f ? v : -1;
}

struct Gap {
  int64_t start_ns, len_ns;
  int thread;
};

struct Options {
  int64_t run_ns = 0, min_ns = 0;
  int threads = 1;
  long kib0 = -1;
  int64_t t0 = 0;
};

// One spinner per CPU: every gap longer than min_ns is printed and kept.
void spin(const Options& o, int i, std::mutex& mu, std::vector<Gap>& gaps) {
  using ccscope::core::nowNs;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(i, &one);
  (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);
  for (int64_t last = nowNs(), now; (now = nowNs()) - o.t0 < o.run_ns; last = now) {
    if (now - last < o.min_ns) continue;
    long kib = o.kib0 < 0 ? -1 : reportedKib() - o.kib0;
    std::lock_guard<std::mutex> lock(mu);
    gaps.push_back({last - o.t0, now - last, i});
    std::printf("gap %.1f ms at %.3f s on thread %d", (now - last) / 1e6, (last - o.t0) / 1e9, i);
    if (kib >= 0) std::printf(", reported +%ld KiB", kib);
    std::printf("\n");
    now = nowNs();  // the print is not a gap
  }
}

struct Freezes {
  int count = 0;
  int64_t longest_ns = 0, total_ns = 0;
};

// A freeze: gaps on every thread that overlap in time; its length is the overlap.
Freezes countFreezes(std::vector<Gap> gaps, int threads) {
  std::sort(gaps.begin(), gaps.end(),
            [](const Gap& a, const Gap& b) { return a.start_ns < b.start_ns; });
  Freezes f;
  for (size_t i = 0; i < gaps.size();) {
    int64_t lo = gaps[i].start_ns, hi = lo + gaps[i].len_ns, shared_hi = hi, shared_lo = lo;
    std::vector<bool> seen(threads, false);
    size_t j = i;
    for (; j < gaps.size() && gaps[j].start_ns < hi; ++j) {
      seen[gaps[j].thread] = true;
      hi = std::max(hi, gaps[j].start_ns + gaps[j].len_ns);
      shared_lo = std::max(shared_lo, gaps[j].start_ns);
      shared_hi = std::min(shared_hi, gaps[j].start_ns + gaps[j].len_ns);
    }
    if (std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }) && shared_hi > shared_lo) {
      ++f.count;
      f.longest_ns = std::max(f.longest_ns, shared_hi - shared_lo);
      f.total_ns += shared_hi - shared_lo;
    }
    i = j;
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::atof(argv[1]) <= 0) {
    std::fprintf(stderr, "usage: %s SECONDS [THRESHOLD_MS=4]\n", argv[0]);
    return 2;
  }
  Options o;
  o.run_ns = static_cast<int64_t>(std::atof(argv[1]) * 1e9);
  o.min_ns = static_cast<int64_t>((argc > 2 ? std::atof(argv[2]) : 4.0) * 1e6);
  o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.kib0 = reportedKib();
  o.t0 = ccscope::core::nowNs();
  std::mutex mu;
  std::vector<Gap> gaps;
  std::vector<std::thread> spinners;
  spinners.reserve(o.threads);
  for (int i = 0; i < o.threads; ++i) spinners.emplace_back([&, i] { spin(o, i, mu, gaps); });
  for (auto& t : spinners) t.join();
  const Freezes f = countFreezes(gaps, o.threads);
  std::printf("freezes: %d seen by all %d threads, longest %.1f ms, %.1f ms in all; ", f.count,
              o.threads, f.longest_ns / 1e6, f.total_ns / 1e6);
  if (o.kib0 < 0)
    std::printf("no free page reporting on this kernel\n");
  else
    std::printf("reported %ld KiB\n", reportedKib() - o.kib0);
  return 0;
}
