// memcpy bandwidth probe: the ceiling a single-copy shared-memory transport works against.
// Prints JSON Lines ({"type":"result","collective":"memcpy","bytes":..,"busbw_gbps":..}) so the
// summaries of `perf/compare.sh mpi` and `pages` read it like any other run.
// Usage: ccscope-memcpy-probe MIN MAX [ITERS] (HUGEPAGES=off: base pages, as `ccscope bench
// --hugepages off`).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/host_memory.h"
#include "core/units.h"

namespace {

int run(int argc, char** argv) {
  using namespace ccscope;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MIN MAX [ITERS]\n", argv[0]);
    return 2;
  }
  auto lo = core::parseSize(argv[1]), hi = core::parseSize(argv[2]);
  if (!lo || !hi || *lo == 0 || *lo > *hi) {
    std::fprintf(stderr, "bad sizes\n");
    return 2;
  }
  const int iters = argc > 3 ? std::atoi(argv[3]) : 20;
  if (iters < 1) {
    std::fprintf(stderr, "ITERS must be at least 1\n");
    return 2;
  }
  size_t max = *hi;
  // The same host memory as the harness's buffers (huge pages from 2 MiB unless HUGEPAGES=off),
  // so that the ceiling is measured on the pages the collectives use.
  const char* hp = std::getenv("HUGEPAGES");
  core::HostPages pages =
      hp && std::string(hp) == "off" ? core::HostPages::kBase : core::HostPages::kHuge;
  core::HostBuffer src_buf(max, pages), dst_buf(max, pages);
  char *src = src_buf.data(), *dst = dst_buf.data();
  std::memset(src, 1, max);
  for (uint64_t b = *lo; b <= max; b *= 2) {
    std::vector<double> us;
    for (int i = 0; i < iters; ++i) {
      int64_t t0 = core::nowNs();
      std::memcpy(dst, src, b);
      us.push_back((core::nowNs() - t0) / 1e3);
    }
    std::sort(us.begin(), us.end());
    double p50 = us[us.size() / 2];
    std::printf(
        "{\"type\":\"result\",\"collective\":\"memcpy\",\"algorithm\":\"memcpy\","
        "\"transport\":\"memory\",\"ranks\":1,\"bytes\":%llu,\"in_place\":false,"
        "\"time_us\":%.3f,\"algbw_gbps\":%.4f,\"busbw_gbps\":%.4f,\"wrong\":-1}\n",
        static_cast<unsigned long long>(b), p50, b / (p50 * 1e3), b / (p50 * 1e3));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ccscope-memcpy-probe: %s\n", e.what());
    return 1;
  }
}
