// The host-network pair probe: for every pair of ranks on different hosts, a ping-pong and
// bursts each way (growing until one takes 2 ms) over the transport the job uses, in one global
// pair order so no coordination is needed beyond per-pair FIFO messages; then, as rank 0 plans
// it, a second pass over the pairs that looked slow.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <vector>

#include "core/host_memory.h"
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
constexpr uint32_t kTagPing = 0x7001, kTagBurst = 0x7002, kTagAck = 0x7003, kTagSize = 0x7004;
// A pair below 10% of the median is slow: healthy links on one fabric differ far less, a
// throttled or degraded one (a 10 Mbit/s fallback, a flapping port) far more.
constexpr double kSlowFraction = 0.1;

// One burst each way at `len`: lead -> other, acknowledged; then other -> lead, started by the
// lead's 8-byte go. `took_s` is the shorter of the two.
Status burstBothWays(PairIo& io, int peer, bool lead, size_t len, double& forward_s,
                     double& backward_s, double& took_s) {
  double fwd = 1e30;
  CCSCOPE_RETURN_IF_ERROR(io.burst(peer, lead, kTagBurst, kTagAck, len, fwd));
  int64_t t0 = core::nowNs();
  if (lead) {
    CCSCOPE_RETURN_IF_ERROR(io.send(peer, kTagAck, 8));
    CCSCOPE_RETURN_IF_ERROR(io.recv(peer, kTagBurst, len));
  } else {
    CCSCOPE_RETURN_IF_ERROR(io.recv(peer, kTagAck, 8));
    CCSCOPE_RETURN_IF_ERROR(io.send(peer, kTagBurst, len));
  }
  double back = (core::nowNs() - t0) / 1e9;
  forward_s = std::min(forward_s, fwd);
  backward_s = std::min(backward_s, back);
  took_s = std::min(fwd, back);
  return Status::ok();
}

// The lower rank of a pair drives and measures; the higher one answers.
Status runPair(PairIo& io, int peer, bool lead, size_t first_burst, json& out) {
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
  // The best of a few bursts each way: one scheduling hiccup must not make a healthy link look
  // slow; a throttled one stays slow.
  uint64_t len = first_burst;
  double forward_s = 1e30, backward_s = 1e30;
  CCSCOPE_RETURN_IF_ERROR(io.rampedRounds(peer, lead, kTagSize, kBursts, kMinTimedSeconds, len,
                                          [&](size_t bytes, bool restart, double& took) {
                                            if (restart) forward_s = backward_s = 1e30;
                                            return burstBothWays(io, peer, lead, bytes, forward_s,
                                                                 backward_s, took);
                                          }));
  if (lead) {
    std::sort(rtt.begin(), rtt.end());
    out = {{"peer", peer},
           {"ok", true},
           {"rtt_us", rtt[rtt.size() / 2]},
           {"burst_bytes", len},
           {"fwd_gbps", len / forward_s / 1e9},
           {"back_gbps", len / backward_s / 1e9}};
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

// " at best in 2 passes (a/b, c/d GB/s)" when the record says how each pass went.
std::string pairPassesNote(const json& r) {
  std::vector<std::string> each;
  for (const json& p : r.value("passes", json::array()))
    if (p.is_array() && p.size() == 2)
      each.push_back(fmt::format("{:.3f}/{:.3f}", p[0].get<double>(), p[1].get<double>()));
  return passesNote(each);
}

// Several pairs named, every one of them through the same host: that host's link is the likely
// culprit, not every rank at the other ends. The culprit becomes that host and its ranks; the
// links stay as they are (each says which pair).
void narrowToCommonHost(ProbeResult& res, const std::vector<std::pair<int, int>>& problems,
                        const std::vector<std::string>& hosts) {
  if (problems.size() < 2) return;
  std::vector<std::string> common;
  for (const std::string& h : std::set<std::string>(hosts.begin(), hosts.end()))
    if (std::all_of(problems.begin(), problems.end(),
                    [&](auto& p) { return hosts[p.first] == h || hosts[p.second] == h; }))
      common.push_back(h);
  if (common.size() != 1) return;  // none, or all between the same two hosts (one link)
  std::set<int> ranks;
  for (auto [a, b] : problems)
    for (int r : {a, b})
      if (hosts[r] == common[0]) ranks.insert(r);
  res.culprit.ranks.assign(ranks.begin(), ranks.end());
  res.culprit.hosts = common;
}

}  // namespace

double pairMedianGbps(const std::vector<json>& per_rank) {
  return medianOf(pairBandwidths(per_rank));
}

json measurePairs(transports::Transport& t, const std::vector<std::string>& hosts,
                  const ProbeOptions& o, const json& only) {
  const int n = t.size(), me = t.rank();
  const bool one_host = allOnOneHost(hosts);
  auto listed = [&](int a, int b) {
    for (const json& p : only)
      if (p.is_array() && p.size() == 2 && p[0] == a && p[1] == b) return true;
    return false;
  };
  core::HostBuffer buf(std::max(o.burst_bytes, kMaxTimedBytes));
  json out = json::array();
  auto mr = t.registerMemory(buf.data(), buf.size());
  if (!mr) return out;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      if (a != me && b != me) continue;
      if (only.is_array() ? !listed(a, b) : !one_host && hosts[a] == hosts[b]) continue;
      PairIo io{t, mr->region(), o.timeout_s, Deadline::afterSeconds(o.timeout_s * n)};
      json r;
      Status s = runPair(io, a == me ? b : a, a == me, o.burst_bytes, r);
      if (!s.isOk() && a == me) r = {{"peer", b}, {"ok", false}, {"error", s.message()}};
      if (a == me) out.push_back(r);
      if (!s.isOk()) return out;  // the transport to that peer is broken: stop here
    }
  return out;
}

json pairsToRecheck(const std::vector<json>& per_rank, const std::vector<std::string>& hosts) {
  json plan = json::array();
  if (allOnOneHost(hosts)) return plan;  // speed on one host is not judged
  const int n = static_cast<int>(per_rank.size());
  // A rank that failed a pair stopped measuring: no second pass with it.
  std::vector<bool> failed(n, false);
  for (int a = 0; a < n; ++a)
    for (const json& r : per_rank[a].is_array() ? per_rank[a] : json::array())
      if (!r.value("ok", false)) {
        failed[a] = true;
        int b = r.value("peer", -1);
        if (b >= 0 && b < n) failed[b] = true;
      }
  const double med = medianOf(pairBandwidths(per_rank));
  for (int a = 0; a < n; ++a)
    for (const json& r : per_rank[a].is_array() ? per_rank[a] : json::array()) {
      int b = r.value("peer", -1);
      if (b < 0 || b >= n || failed[a] || failed[b] || !r.value("ok", false)) continue;
      double fwd = r["fwd_gbps"].get<double>(), back = r["back_gbps"].get<double>();
      // The slow direction's best burst: 50 ms and more is no scheduling delay.
      double slow_s = r.value("burst_bytes", 0.0) / (std::min(fwd, back) * 1e9);
      if (std::min(fwd, back) < kSlowFraction * med && slow_s < kSurelySlowSeconds)
        plan.push_back({a, b});
    }
  return plan;
}

void mergeRecheck(std::vector<json>& per_rank, const std::vector<json>& second) {
  for (size_t a = 0; a < per_rank.size() && a < second.size(); ++a) {
    if (!per_rank[a].is_array() || !second[a].is_array()) continue;
    for (const json& again : second[a])
      for (json& first : per_rank[a]) {
        if (first.value("peer", -1) != again.value("peer", -2)) continue;
        json passes = json::array();
        if (first.value("ok", false)) passes.push_back({first["fwd_gbps"], first["back_gbps"]});
        if (!again.value("ok", false)) {  // it failed the second time: that is the finding
          first = again;
        } else {
          passes.push_back({again["fwd_gbps"], again["back_gbps"]});
          for (const char* k : {"fwd_gbps", "back_gbps", "burst_bytes"})
            first[k] = std::max(first[k].get<double>(), again[k].get<double>());
          first["rtt_us"] = std::min(first["rtt_us"].get<double>(), again["rtt_us"].get<double>());
        }
        first["passes"] = passes;
      }
  }
}

ProbeResult judgePairs(const std::vector<json>& per_rank, const std::vector<std::string>& hosts) {
  ProbeResult res{Layer::kHostNetwork, "pairs", ProbeOutcome::kPass, "", {}, {}, {}};
  // On one host every pair is loopback: speed says nothing about a network, reachability does.
  const bool one_host = allOnOneHost(hosts);
  std::vector<double> bws = pairBandwidths(per_rank);
  double med = medianOf(bws);
  std::vector<std::pair<int, int>> problems;  // the pairs named, as (rank, rank)
  for (size_t a = 0; a < per_rank.size(); ++a)
    for (const json& r : per_rank[a].is_array() ? per_rank[a] : json::array()) {
      int b = r.value("peer", -1);
      if (b < 0) continue;
      std::string issue;
      if (!r.value("ok", false))
        issue = "unreachable: " + r.value("error", std::string());
      else if (!one_host && std::min(r["fwd_gbps"].get<double>(), r["back_gbps"].get<double>()) <
                                kSlowFraction * med)
        issue = fmt::format("slow: {:.3f}/{:.3f} GB/s each way{} vs a median of {:.3f}",
                            r["fwd_gbps"].get<double>(), r["back_gbps"].get<double>(),
                            pairPassesNote(r), med);
      if (issue.empty()) continue;
      problems.emplace_back(static_cast<int>(a), b);
      res.outcome = ProbeOutcome::kFail;
      res.culprit.ranks.push_back(static_cast<int>(a));
      res.culprit.ranks.push_back(b);
      res.culprit.hosts.push_back(hosts[a]);
      res.culprit.hosts.push_back(hosts[b]);
      res.culprit.links.push_back(reports::linkName(hosts[a], hosts[b]));
      res.evidence.push_back(
          fmt::format("rank {} ({}) <-> rank {} ({}): {}", a, hosts[a], b, hosts[b], issue));
    }
  narrowToCommonHost(res, problems, hosts);
  size_t twice = 0;
  for (const json& rows : per_rank)
    for (const json& r : rows.is_array() ? rows : json::array())
      twice += r.is_object() && r.value("passes", json::array()).size() > 1;
  res.detail =
      res.outcome == ProbeOutcome::kPass
          ? fmt::format("{} pair measurement(s), median {:.3f} GB/s{}", bws.size() / 2, med,
                        twice ? fmt::format("; {} measured again after a slow first "
                                            "pass, and fine then",
                                            twice)
                              : "")
          : "pairs of hosts that are unreachable or slow";
  return res;
}

}  // namespace ccscope::diagnostics
