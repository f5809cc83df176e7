#include "burnin/pair_measure.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace ccscope::burnin {

using core::Deadline;
using core::Status;

namespace {

constexpr uint32_t kTagPing = 0x7101, kTagData = 0x7102, kTagAck = 0x7103, kTagCount = 0x7104;
constexpr int kMaxMessages = 4096;
constexpr int kBatches = 32;
constexpr double kOverrun = 4;

struct Io {
  transports::Transport& t;
  const transports::MemoryRegion& buf;
  int peer;
  double timeout_s;
  Status send(uint32_t tag, size_t off, size_t len) {
    CCSCOPE_ASSIGN_OR_RETURN(auto r, t.postSend(peer, tag, buf, off, len));
    return t.waitOrCancel(r, Deadline::afterSeconds(timeout_s));
  }
  Status recv(uint32_t tag, size_t off, size_t len) {
    CCSCOPE_ASSIGN_OR_RETURN(auto r, t.postRecv(peer, tag, buf, off, len));
    return t.waitOrCancel(r, Deadline::afterSeconds(timeout_s));
  }
  // The message count of a timed test: the lead says it, the partner hears it.
  Status agree(bool lead, int& count) {
    auto* p = reinterpret_cast<int64_t*>(buf.base());
    if (lead) *p = count;
    CCSCOPE_RETURN_IF_ERROR(lead ? send(kTagCount, 0, 8) : recv(kTagCount, 0, 8));
    count = static_cast<int>(*p);
    return Status::ok();
  }
};

Status latency(Io& io, bool lead, int iters, PairFigures& f) {
  std::vector<double> us;
  us.reserve(iters);
  const int warm = std::max(1, iters / 10);
  for (int i = 0; i < warm + iters; ++i) {
    const int64_t t0 = core::nowNs();
    if (lead) {
      CCSCOPE_RETURN_IF_ERROR(io.send(kTagPing, 0, 8));
      CCSCOPE_RETURN_IF_ERROR(io.recv(kTagPing, 8, 8));
    } else {
      CCSCOPE_RETURN_IF_ERROR(io.recv(kTagPing, 8, 8));
      CCSCOPE_RETURN_IF_ERROR(io.send(kTagPing, 0, 8));
    }
    if (lead && i >= warm) us.push_back(static_cast<double>(core::nowNs() - t0) / 2e3);
  }
  if (!lead) return Status::ok();
  std::sort(us.begin(), us.end());
  f.lat_samples = static_cast<int>(us.size());
  f.p50_us = percentile(us, 0.5);
  f.p99_us = percentile(us, 0.99);
  f.p999_us = percentile(us, 0.999);
  f.max_us = us.back();
  return Status::ok();
}

// `count` messages lead -> partner, then the partner's acknowledgement.
Status oneWay(Io& io, bool lead, size_t bytes, int count) {
  for (int i = 0; i < count; ++i)
    CCSCOPE_RETURN_IF_ERROR(lead ? io.send(kTagData, 0, bytes) : io.recv(kTagData, 0, bytes));
  return lead ? io.recv(kTagAck, 0, 8) : io.send(kTagAck, 0, 8);
}

// `count` messages each way at once, a send and a receive in flight on each side.
Status bothWays(Io& io, size_t bytes, int count) {
  for (int i = 0; i < count; ++i) {
    CCSCOPE_ASSIGN_OR_RETURN(auto r, io.t.postRecv(io.peer, kTagData, io.buf, bytes, bytes));
    CCSCOPE_ASSIGN_OR_RETURN(auto s, io.t.postSend(io.peer, kTagData, io.buf, 0, bytes));
    Status ss = io.t.waitOrCancel(s, Deadline::afterSeconds(io.timeout_s));
    Status rs = io.t.waitOrCancel(r, Deadline::afterSeconds(io.timeout_s));
    CCSCOPE_RETURN_IF_ERROR(ss);
    CCSCOPE_RETURN_IF_ERROR(rs);
  }
  return Status::ok();
}

// Up to `count` messages in batches of at most count / kBatches; before each the lead says how
// many follow (0: none). It stops once kOverrun x `target` seconds have passed, and sizes each
// batch to what the last one's rate fits into the time left: a link that slows in the middle of
// a test (100x and more under a tbf) ends it within one batch of the slowdown, not after the
// whole count calibrated at full speed. `seconds` counts the batches only, not the agreements.
Status timed(Io& io, bool lead, int count, double target, const std::function<Status(int)>& batch,
             int& done, double& seconds) {
  const int per = std::max(1, (count + kBatches - 1) / kBatches);
  const double budget = kOverrun * target;
  double rate = 0;  // messages per second of the last batch
  done = 0;
  seconds = 0;
  for (;;) {
    int next = done < count && (done == 0 || seconds < budget) ? std::min(per, count - done) : 0;
    if (next > 0 && rate > 0)
      next = std::clamp(static_cast<int>(rate * (budget - seconds)), 1, next);
    CCSCOPE_RETURN_IF_ERROR(io.agree(lead, next));
    if (next <= 0) break;
    const int64_t t0 = core::nowNs();
    CCSCOPE_RETURN_IF_ERROR(batch(next));
    const double took = static_cast<double>(core::nowNs() - t0) / 1e9;
    seconds += took;
    rate = took > 0 ? next / took : 0;
    done += next;
  }
  return Status::ok();
}

// One message calibrates: as many as fill `target` seconds follow (at least 2).
int messagesFor(double one_s, double target) {
  if (!(one_s > 0)) return kMaxMessages;
  return static_cast<int>(std::clamp(target / one_s, 2.0, double{kMaxMessages}));
}

}  // namespace

Status exchange(transports::Transport& t, const transports::MemoryRegion& buf, int peer,
                size_t bytes, int count, double timeout_s) {
  Io io{t, buf, peer, timeout_s};
  return bothWays(io, bytes, count);
}

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto i = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, i == 0 ? 0 : i - 1)];
}

core::Result<PairFigures> measurePair(transports::Transport& t, const transports::MemoryRegion& buf,
                                      int peer, bool lead, const PairSettings& s) {
  Io io{t, buf, peer, s.timeout_s};
  PairFigures f;
  CCSCOPE_RETURN_IF_ERROR(latency(io, lead, s.lat_iters, f));
  const int64_t t0 = core::nowNs();
  CCSCOPE_RETURN_IF_ERROR(oneWay(io, lead, s.bytes, 1));
  // Only the lead's count matters: it says each batch's size.
  const int n = messagesFor(static_cast<double>(core::nowNs() - t0) / 1e9, s.seconds);
  double took = 0;
  CCSCOPE_RETURN_IF_ERROR(timed(
      io, lead, n, s.seconds, [&](int k) { return oneWay(io, lead, s.bytes, k); }, f.uni_messages,
      took));
  f.uni_gbps = static_cast<double>(s.bytes) * f.uni_messages / took / 1e9;
  // Both ways take about as long per message as one way on a full-duplex link.
  CCSCOPE_RETURN_IF_ERROR(timed(
      io, lead, n, s.seconds, [&](int k) { return bothWays(io, s.bytes, k); }, f.bidir_messages,
      took));
  f.bidir_gbps = 2.0 * static_cast<double>(s.bytes) * f.bidir_messages / took / 1e9;
  if (!lead) return PairFigures{};
  return f;
}

}  // namespace ccscope::burnin
