#include "diagnostics/live/clock_skew.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace ccscope::diagnostics {

using core::Deadline;
using core::Layer;
using core::Status;

namespace {

constexpr int kClockRounds = 8;
constexpr uint32_t kTagClock = 0x7101;

int64_t wallClockNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The 16-byte buffer of one exchange: [0] rank 0's round number, [1] the peer's clock.
struct ClockIo {
  explicit ClockIo(transports::Transport& tr) : t(tr) {}
  transports::Transport& t;
  int64_t words[2] = {0, 0};
  transports::MemoryRegion mr;
  Status send(int peer, size_t off, Deadline d) {
    CCSCOPE_ASSIGN_OR_RETURN(auto r, t.postSend(peer, kTagClock, mr, off, sizeof(int64_t)));
    return t.waitOrCancel(r, d);  // the words may go out of scope after a timeout
  }
};

Status exchangeWith(ClockIo& io, int peer, const ProbeOptions& o, std::vector<ClockSample>& out) {
  Deadline d = Deadline::afterSeconds(o.timeout_s);
  for (int i = 0; i < kClockRounds; ++i) {
    io.words[0] = i;
    CCSCOPE_ASSIGN_OR_RETURN(
        auto rr, io.t.postRecv(peer, kTagClock, io.mr, sizeof(int64_t), sizeof(int64_t)));
    ClockSample s;
    s.t_send_ns = wallClockNs();
    Status st = io.send(peer, 0, d);
    Status sr = io.t.waitOrCancel(rr, d);  // always waited for or cancelled: never left posted
    s.t_recv_ns = wallClockNs();
    CCSCOPE_RETURN_IF_ERROR(st);
    CCSCOPE_RETURN_IF_ERROR(sr);
    s.t_remote_ns = io.words[1];
    out.push_back(s);
  }
  return Status::ok();
}

// Every rank on every host other than rank 0's is off by more than the bound, the same way, and
// there are at least two such hosts: rank 0's clock is the one that is wrong.
bool rankZeroIsOddOneOut(const std::vector<const PeerClock*>& over,
                         const std::vector<PeerClock>& peers,
                         const std::vector<std::string>& hosts) {
  std::vector<std::string> others;
  for (const PeerClock& p : peers)
    if (hostOf(p.rank, hosts) != hostOf(0, hosts)) others.push_back(hostOf(p.rank, hosts));
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  size_t remote_peers = std::count_if(peers.begin(), peers.end(), [&](const PeerClock& p) {
    return hostOf(p.rank, hosts) != hostOf(0, hosts);
  });
  if (others.size() < 2 || over.size() != remote_peers) return false;
  bool ahead = over.front()->offset.offset_ns > 0;
  return std::all_of(over.begin(), over.end(), [&](const PeerClock* p) {
    return (p->offset.offset_ns > 0) == ahead && hostOf(p->rank, hosts) != hostOf(0, hosts);
  });
}

void blameSkew(ProbeResult& r, const std::vector<const PeerClock*>& over,
               const std::vector<PeerClock>& peers, const std::vector<std::string>& hosts,
               double max_skew_s) {
  r.layer = Layer::kBootstrap;
  r.outcome = ProbeOutcome::kFail;
  r.next_step =
      "Synchronise the named hosts' clocks (chronyc tracking or timedatectl: NTP or PTP running "
      "and "
      "reachable), then rerun ccscope diagnose.";
  for (const PeerClock* p : over)
    r.evidence.push_back(fmt::format("{}: clock {} ± {} from rank 0's ({})",
                                     rankLabel(p->rank, hosts), formatOffset(p->offset.offset_ns),
                                     formatOffset(p->offset.uncertainty_ns).substr(1),
                                     hostOf(0, hosts)));
  if (rankZeroIsOddOneOut(over, peers, hosts)) {
    r.culprit.ranks.push_back(0);
    r.culprit.hosts.push_back(hostOf(0, hosts));
    r.detail = fmt::format("the clock of {} differs from every other host's by more than {} s",
                           rankLabel(0, hosts), max_skew_s);
    return;
  }
  const PeerClock* worst = over.front();
  for (const PeerClock* p : over) {
    r.culprit.ranks.push_back(p->rank);
    r.culprit.hosts.push_back(hostOf(p->rank, hosts));
    if (std::llabs(p->offset.offset_ns) > std::llabs(worst->offset.offset_ns)) worst = p;
  }
  r.detail = fmt::format("the clock of {} is {} {} rank 0's, more than the {} s allowed",
                         rankLabel(worst->rank, hosts),
                         formatOffset(std::llabs(worst->offset.offset_ns)).substr(1),
                         worst->offset.offset_ns > 0 ? "ahead of" : "behind", max_skew_s);
}

}  // namespace

std::string formatOffset(int64_t ns) {
  double s = ns / 1e9;
  return std::fabs(s) >= 0.01 ? fmt::format("{:+.3f} s", s) : fmt::format("{:+.6f} s", s);
}

ClockOffset estimateClockOffset(std::span<const ClockSample> samples) {
  ClockOffset best;
  for (const ClockSample& s : samples) {
    int64_t rtt = s.t_recv_ns - s.t_send_ns;
    if (rtt < 0) continue;  // the local clock stepped during this exchange
    if (best.valid && rtt >= best.rtt_ns) continue;
    best.valid = true;
    best.rtt_ns = rtt;
    best.uncertainty_ns = rtt / 2;
    best.offset_ns = s.t_remote_ns - (s.t_send_ns + rtt / 2);  // no overflow near INT64_MAX
  }
  return best;
}

ProbeResult judgeClockSkew(const std::vector<PeerClock>& peers,
                           const std::vector<std::string>& hosts, double max_skew_s) {
  ProbeResult r{Layer::kBootstrap, "clock skew", ProbeOutcome::kPass, "", {}, {}, {}};
  const int64_t bound_ns = core::secondsToNs(max_skew_s);
  std::vector<const PeerClock*> over, silent;
  const PeerClock* largest = nullptr;
  for (const PeerClock& p : peers) {
    if (!p.answered || !p.offset.valid) {
      silent.push_back(&p);
      continue;
    }
    if (!largest || std::llabs(p.offset.offset_ns) > std::llabs(largest->offset.offset_ns))
      largest = &p;
    if (std::llabs(p.offset.offset_ns) - p.offset.uncertainty_ns > bound_ns) over.push_back(&p);
  }
  if (!over.empty()) blameSkew(r, over, peers, hosts, max_skew_s);
  if (!silent.empty() && over.empty()) {
    r.layer = Layer::kHostNetwork;
    r.outcome = ProbeOutcome::kFail;
    r.detail = "ranks that did not answer the clock exchange";
    for (const PeerClock* p : silent) {
      r.culprit.ranks.push_back(p->rank);
      if (hostOf(p->rank, hosts) != hostOf(0, hosts)) {
        r.culprit.hosts.push_back(hostOf(0, hosts));
        r.culprit.hosts.push_back(hostOf(p->rank, hosts));
        r.culprit.links.push_back(reports::linkName(hostOf(0, hosts), hostOf(p->rank, hosts)));
      }
    }
  }
  for (const PeerClock* p : silent)
    r.evidence.push_back(fmt::format("{} did not answer rank 0's clock exchange: {}",
                                     rankLabel(p->rank, hosts),
                                     p->error.empty() ? "no usable sample" : p->error));
  if (r.outcome != ProbeOutcome::kPass) return r;
  if (!largest) {
    r.outcome = ProbeOutcome::kSkip;
    r.detail = "skipped: no other rank to compare clocks with";
    return r;
  }
  r.detail =
      fmt::format("largest offset {} ± {}: {}; bound {} s", formatOffset(largest->offset.offset_ns),
                  formatOffset(largest->offset.uncertainty_ns).substr(1),
                  rankLabel(largest->rank, hosts), max_skew_s);
  return r;
}

std::vector<PeerClock> measureClockSkew(transports::Transport& t, const std::vector<int>& peers,
                                        const ProbeOptions& o) {
  std::vector<PeerClock> out;
  ClockIo io(t);
  auto reg = t.registerMemory(io.words, sizeof io.words);
  for (int p : peers) {
    PeerClock pc;
    pc.rank = p;
    std::vector<ClockSample> samples;
    Status s = reg.isOk() ? (io.mr = reg->region(), exchangeWith(io, p, o, samples)) : reg.status();
    pc.answered = s.isOk();
    if (!s.isOk()) pc.error = s.message();
    pc.offset = estimateClockOffset(samples);
    out.push_back(pc);
  }
  return out;
}

Status answerClockSkew(transports::Transport& t, const ProbeOptions& o, double arrive_s) {
  ClockIo io(t);
  CCSCOPE_ASSIGN_OR_RETURN(transports::Registration reg,
                           t.registerMemory(io.words, sizeof io.words));
  io.mr = reg.region();
  const int64_t shift_ns = t.rank() == o.testonly_clock_offset_rank
                               ? static_cast<int64_t>(o.testonly_clock_offset_s * 1e9)
                               : 0;
  Deadline d = Deadline::afterSeconds(arrive_s);
  for (int i = 0; i < kClockRounds; ++i) {
    CCSCOPE_ASSIGN_OR_RETURN(auto rr, t.postRecv(0, kTagClock, io.mr, 0, sizeof(int64_t)));
    CCSCOPE_RETURN_IF_ERROR(t.waitOrCancel(rr, d));
    if (io.words[0] != i)  // rank 0 numbers its rounds: a lost or repeated message shows here
      return Status(
          core::Code::kInternal,
          fmt::format("clock exchange out of step: round {} arrived as round {}", i, io.words[0]));
    if (i == 0) d = Deadline::afterSeconds(o.timeout_s);
    io.words[1] = wallClockNs() + shift_ns;
    CCSCOPE_RETURN_IF_ERROR(io.send(0, sizeof(int64_t), d));
  }
  return Status::ok();
}

}  // namespace ccscope::diagnostics
