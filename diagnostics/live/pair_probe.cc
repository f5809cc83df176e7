// The host-network pair probe: for every pair of ranks on different hosts, a ping-pong and a
// burst each way over the transport the job uses, in one global pair order so no coordination
// is needed beyond per-pair FIFO messages.
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "collectives/schedule_backend.h"
#include "diagnostics/live/pair_io.h"
#include "diagnostics/live/probes.h"

namespace ccscope::diagnostics {

using core::Deadline;
using core::Layer;
using core::Status;
using nlohmann::json;

namespace {

constexpr int kPingRounds = 20;
constexpr int kBursts = 3;
constexpr uint32_t kTagPing = 0x7001, kTagBurst = 0x7002, kTagAck = 0x7003;
// A pair below 10% of the median is slow: healthy links on one fabric differ far less, a
// throttled or degraded one (a 10 Mbit/s fallback, a flapping port) far more.
constexpr double kSlowFraction = 0.1;

// The lower rank of a pair drives and measures; the higher one answers.
Status runPair(PairIo& io, int peer, bool lead, size_t burst, json& out) {
  std::vector<double> rtt;
  for (int i = 0; i < kPingRounds; ++i) {
    int64_t t0 = core::nowNs();
    if (lead) {
      CCSCOPE_RETURN_IF_ERROR(io.send(peer, kTagPing, 8));
      CCSCOPE_RETURN_IF_ERROR(io.recv(peer, kTagPing, 8));
      rtt.push_back((core::nowNs() - t0) / 1e3);
    } else {
      CCSCOPE_RETURN_IF_ERROR(io.recv(peer, kTagPing, 8));
      CCSCOPE_RETURN_IF_ERROR(io.send(peer, kTagPing, 8));
    }
  }
  // lead -> other, acknowledged; then other -> lead. The best of a few bursts each way: one
  // scheduling hiccup must not make a healthy link look slow; a throttled one stays slow.
  double forward_s = 1e30, backward_s = 1e30;
  for (int b = 0; b < kBursts; ++b) {
    CCSCOPE_RETURN_IF_ERROR(io.burst(peer, lead, kTagBurst, kTagAck, burst, forward_s));
    int64_t t0 = core::nowNs();
    if (lead) {
      CCSCOPE_RETURN_IF_ERROR(io.send(peer, kTagAck, 8));
      CCSCOPE_RETURN_IF_ERROR(io.recv(peer, kTagBurst, burst));
    } else {
      CCSCOPE_RETURN_IF_ERROR(io.recv(peer, kTagAck, 8));
      CCSCOPE_RETURN_IF_ERROR(io.send(peer, kTagBurst, burst));
    }
    backward_s = std::min(backward_s, (core::nowNs() - t0) / 1e9);
  }
  if (lead) {
    std::sort(rtt.begin(), rtt.end());
    out = {{"peer", peer}, {"ok", true}, {"rtt_us", rtt[rtt.size() / 2]},
           {"fwd_gbps", burst / forward_s / 1e9}, {"back_gbps", burst / backward_s / 1e9}};
  }
  return Status::ok();
}


// Every direction of every pair measured: the GB/s of each burst.
std::vector<double> pairBandwidths(const std::vector<json>& per_rank) {
  std::vector<double> bws;
  for (const json& rows : per_rank)
    for (const json& r : rows.is_array() ? rows : json::array())
      if (r.value("ok", false)) {
        bws.push_back(r["fwd_gbps"].get<double>());
        bws.push_back(r["back_gbps"].get<double>());
      }
  return bws;
}

}  // namespace

double pairMedianGbps(const std::vector<json>& per_rank) { return medianOf(pairBandwidths(per_rank)); }

json measurePairs(transports::Transport& t, const std::vector<std::string>& hosts, const ProbeOptions& o) {
  const int n = t.size(), me = t.rank();
  bool one_host = std::all_of(hosts.begin(), hosts.end(), [&](auto& h) { return h == hosts[0]; });
  collectives::HostBuffer buf(o.burst_bytes);
  json out = json::array();
  auto mr = t.registerMemory(buf.data(), buf.size());
  if (!mr) return out;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      if (a != me && b != me) continue;
      if (!one_host && hosts[a] == hosts[b]) continue;
      PairIo io{t, *mr, o.timeout_s, Deadline::afterSeconds(o.timeout_s * n)};
      json r;
      Status s = runPair(io, a == me ? b : a, a == me, o.burst_bytes, r);
      if (!s.isOk() && a == me) r = {{"peer", b}, {"ok", false}, {"error", s.message()}};
      if (a == me) out.push_back(r);
      if (!s.isOk()) return out;  // the transport to that peer is broken: stop here
    }
  return out;
}

ProbeResult judgePairs(const std::vector<json>& per_rank, const std::vector<std::string>& hosts) {
  ProbeResult res{Layer::kHostNetwork, "pairs", ProbeOutcome::kPass, "", {}, {}, {}};
  // On one host every pair is loopback: speed says nothing about a network, reachability does.
  bool one_host = std::all_of(hosts.begin(), hosts.end(), [&](auto& h) { return h == hosts[0]; });
  std::vector<double> bws = pairBandwidths(per_rank);
  double med = medianOf(bws);
  for (size_t a = 0; a < per_rank.size(); ++a)
    for (const json& r : per_rank[a].is_array() ? per_rank[a] : json::array()) {
      int b = r.value("peer", -1);
      if (b < 0) continue;
      std::string issue;
      if (!r.value("ok", false)) issue = "unreachable: " + r.value("error", std::string());
      else if (!one_host && std::min(r["fwd_gbps"].get<double>(), r["back_gbps"].get<double>()) < kSlowFraction * med)
        issue = fmt::format("slow: {:.3f}/{:.3f} GB/s each way vs a median of {:.3f}",
                            r["fwd_gbps"].get<double>(), r["back_gbps"].get<double>(), med);
      if (issue.empty()) continue;
      res.outcome = ProbeOutcome::kFail;
      res.culprit.ranks.push_back(static_cast<int>(a));
      res.culprit.ranks.push_back(b);
      res.culprit.hosts.push_back(hosts[a]);
      res.culprit.hosts.push_back(hosts[b]);
      res.culprit.links.push_back(reports::linkName(hosts[a], hosts[b]));
      res.evidence.push_back(fmt::format("rank {} ({}) <-> rank {} ({}): {}", a, hosts[a], b, hosts[b], issue));
    }
  res.detail = res.outcome == ProbeOutcome::kPass
                   ? fmt::format("{} pair measurement(s), median {:.3f} GB/s", bws.size() / 2, med)
                   : "pairs of hosts that are unreachable or slow";
  return res;
}

}  // namespace ccscope::diagnostics
