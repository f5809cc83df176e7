// What the transport conformance suite's two files share: the transports it runs on, the
// fixture every case derives from, and the helpers of the rank bodies.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "core/check.h"
#include "tests/transports/rank_runner.h"

namespace ccscope::transports::conformance {

inline constexpr char kSentinel = 0x5a;  // bytes a receive must not touch

struct TransportCase {
  const char* name;
  int streams;
  const char* ucx_tls = nullptr;  // ucx: UCX_TLS for the ranks (they inherit the environment)
  bool ucx_peer_errors = true;    // ucx: peer error handling (--ucx-errors peer) or none
};
inline void PrintTo(const TransportCase& c, std::ostream* os) {
  *os << c.name << ":" << c.streams << (c.ucx_tls ? c.ucx_tls : "")
      << (c.ucx_peer_errors ? "" : " none");
}

// A registered buffer that lives as long as the body.
struct Buffer {
  std::vector<char> data;
  Registration reg;
  MemoryRegion mr;
  Buffer(Transport& t, size_t len, char fill = 0) : data(std::max<size_t>(len, 1), fill) {
    auto r = t.registerMemory(data.data(), len);
    CCSCOPE_CHECK(r.isOk(), r.status().toString());
    reg = std::move(*r);
    mr = reg.region();
  }
  char* at(size_t off) { return data.data() + off; }
};

inline bool contains(const core::Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

// Waits for every request in order; the first failure wins (the rest are still waited for).
inline core::Status waitAll(Transport& t, const std::vector<Request>& reqs,
                            core::Deadline deadline) {
  core::Status first;
  for (const Request& r : reqs) {
    core::Status s = t.wait(r, deadline);
    if (first.isOk() && !s.isOk()) first = s;
  }
  return first;
}

// A post's status: ok when it was accepted (for posts that must fail at once).
inline core::Status postStatus(const core::Result<Request>& r) {
  return r.isOk() ? core::Status::ok() : r.status();
}

// Every rank of the body reaches `name` (through the store: it drives no transport).
inline core::Status barrier(RankContext& c, const std::string& name) {
  return c.store.barrier(name, c.deadline);
}

// Seconds since `t0_ns` (core::nowNs()).
inline double secondsSince(int64_t t0_ns) {
  return static_cast<double>(core::nowNs() - t0_ns) / 1e9;
}

inline std::string checkData(const char* buf, size_t len, uint64_t seed) {
  int64_t bad = firstMismatch(buf, len, seed);
  return bad < 0 ? "" : fmt::format("byte {} of {} differs (seed {})", bad, len, seed);
}

// One suite over both files, instantiated once (transport_conformance_test.cc) for every
// transport.
class TransportConformanceTest : public ::testing::TestWithParam<TransportCase> {
 protected:
  // (UCX's memory hooks are off for this binary: tests/transports/CMakeLists.txt says why.)
  // Hardware that is absent skips with the reason (verbs without an RDMA device), never passes.
  void SetUp() override {
    if (core::Status s = transportUsable(GetParam().name); !s.isOk()) GTEST_SKIP() << s.message();
    if (GetParam().ucx_tls) setenv("UCX_TLS", GetParam().ucx_tls, 1);
  }
  void TearDown() override {
    if (GetParam().ucx_tls) unsetenv("UCX_TLS");
  }
  // What a transport cannot do by design skips with the reason: UCX moves a message whole,
  // cannot take back a send it accepted, and completes a send above its rendezvous threshold
  // only once the receiver took it (so a sender cannot finish and exit before its peer posts).
  // Without peer error handling (--ucx-errors none) a killed peer is noticed only at the deadline.
  bool lacks(const char* what) const {
    const std::string w = what;
    if (std::string(GetParam().name) != "ucx") return false;
    if (w == "peer-death-notice") return !GetParam().ucx_peer_errors;
    return w == "partial-progress" || w == "withdraw-send" || w == "buffered-sends";
  }
  RankRunOptions options(int np) const {
    RankRunOptions o = localRanks(GetParam().name, np);
    o.options.streams = GetParam().streams;
    o.options.ucx_peer_errors = GetParam().ucx_peer_errors;
    return o;
  }
};

}  // namespace ccscope::transports::conformance
