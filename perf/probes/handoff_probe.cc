// Core-to-core handoff probe: one thread on CPU A writes a block and raises a flag, a thread on
// CPU B copies the block out and lowers it, N times; prints the round trip. This is what the shm
// transport's slot path costs beyond its copies, and on a VM it moves with where the host runs
// the two vCPUs (docs/performance.md, "Measuring on small shared machines").
// Usage: ccscope-handoff-probe [BYTES=8192] [ROUNDS=200000] [CPU_A=0] [CPU_B=1]
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 8192;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 200000;
  const int cpu_a = argc > 3 ? std::atoi(argv[3]) : 0, cpu_b = argc > 4 ? std::atoi(argv[4]) : 1;
  if (bytes == 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: %s [BYTES>0] [ROUNDS>0] [CPU_A] [CPU_B]\n", argv[0]);
    return 2;
  }
  alignas(64) static std::atomic<int> flag{0};
  std::vector<char> block(bytes), sink(bytes);
  bool pinned_b = true;
  std::thread reader([&] {
    pinned_b = pin(cpu_b);
    for (int i = 0; i < rounds; ++i) {
      while (flag.load(std::memory_order_acquire) != 1) {
      }
      std::memcpy(sink.data(), block.data(), bytes);
      flag.store(0, std::memory_order_release);
    }
  });
  bool pinned_a = pin(cpu_a);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds; ++i) {
    std::memset(block.data(), i, bytes);  // dirty in A's cache: B's copy pulls it across
    flag.store(1, std::memory_order_release);
    while (flag.load(std::memory_order_acquire) != 0) {
    }
  }
  double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  reader.join();
  if (!pinned_a || !pinned_b) {
    std::fprintf(stderr, "cannot pin to CPUs %d and %d\n", cpu_a, cpu_b);
    return 2;
  }
  std::printf(
      "{\"type\":\"handoff\",\"bytes\":%zu,\"rounds\":%d,\"cpus\":[%d,%d],\"round_trip_ns\":%.0f}"
      "\n",
      bytes, rounds, cpu_a, cpu_b, ns / rounds);
  return 0;
}
