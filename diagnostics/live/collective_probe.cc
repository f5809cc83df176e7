#include "diagnostics/live/collective_probe.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "collectives/schedule_backend.h"
#include "diagnostics/live/pair_io.h"

namespace ccscope::diagnostics {

using core::Deadline;
using core::Layer;
using core::Status;
using nlohmann::json;

namespace {

constexpr int kHopRuns = 5;    // best of: a scheduling hiccup must not flag a healthy hop
constexpr int kHopPasses = 2;  // ... nor a stall of some milliseconds
constexpr uint32_t kTagHop = 0x7201, kTagHopAck = 0x7202, kTagHopSize = 0x7203;

double busGbps(int n, double seconds) {
  return seconds > 0 ? collectives::busbwFactor(collectives::Collective::kAllreduce, n) *
                           kCollectiveProbeBytes / seconds / 1e9
                     : 0;
}

// The sender times a burst and the receiver's 8-byte ack, best of kHopRuns, at a size that
// grows from `bytes` until a burst takes kMinTimedSeconds (PairIo::rampedRounds); with `bytes`
// 0 the sender skips the hop.
Status timeHop(PairIo& io, int peer, bool sender, size_t bytes, size_t& measured_bytes,
               double& best_s) {
  uint64_t len = bytes;
  best_s = 1e30;
  auto round = [&](size_t n, bool restart, double& took) {
    if (restart) best_s = 1e30;
    took = 1e30;
    Status s = io.burst(peer, sender, kTagHop, kTagHopAck, n, took);
    best_s = std::min(best_s, took);
    return s;
  };
  CCSCOPE_RETURN_IF_ERROR(
      io.rampedRounds(peer, sender, kTagHopSize, kHopRuns, kMinTimedSeconds, len, round));
  measured_bytes = len;
  return Status::ok();
}

struct Hop {
  int from = -1, to = -1;
  bool measured = false, ok = true;
  double gbps = 0;             // the best of every pass
  std::vector<double> passes;  // each pass's best
  std::string error;
};

std::vector<Hop> hopsFrom(const std::vector<json>& per_rank) {
  const int n = static_cast<int>(per_rank.size());
  std::vector<Hop> hops(n);
  for (const json& rows : per_rank)
    for (const json& rec : rows.is_array() ? rows : json::array()) {
      int h = rec.value("hop", -1);
      if (h < 0 || h >= n) continue;
      Hop& hop = hops[h];
      hop.from = h;
      hop.to = (h + 1) % n;
      hop.measured = true;
      bool send = rec.value("role", std::string()) == "send";
      if (send && rec.value("ok", false)) {
        hop.gbps = rec.value("gbps", 0.0);
        if (rec.contains("passes") && rec["passes"].is_array())
          for (const json& g : rec["passes"])
            if (g.is_number()) hop.passes.push_back(g.get<double>());
      }
      if (!rec.value("ok", false)) {
        hop.ok = false;
        if (hop.error.empty() || send)
          hop.error = fmt::format("{}: {}", send ? "sender" : "receiver",
                                  rec.value("error", std::string()));
      }
    }
  return hops;
}

std::string hopPassesNote(const Hop& h) {
  std::vector<std::string> each;
  for (double g : h.passes) each.push_back(fmt::format("{:.3f}", g));
  return passesNote(each);
}

bool crosses(const Hop& h, const std::vector<std::string>& hosts) {
  return hostOf(h.from, hosts) != hostOf(h.to, hosts);
}

// Adds every failed hop, and every hop between two hosts under kSlowHopFraction of the median,
// to r's evidence (a link between hosts first) and culprit; true when one is between hosts.
bool blameHops(const std::vector<Hop>& hops, const std::vector<std::string>& hosts, double med,
               ProbeResult& r) {
  bool cross_host_fault = false;
  for (const Hop& h : hops) {
    if (!h.measured) continue;
    std::string issue;
    if (!h.ok)
      issue = "failed: " + h.error;
    else if (crosses(h, hosts) && h.gbps > 0 && h.gbps < kSlowHopFraction * med)
      issue = fmt::format(
          "runs at {:.3f} GB/s{}, under a quarter of the median hop between hosts ({:.3f} GB/s)",
          h.gbps, hopPassesNote(h), med);
    if (issue.empty()) continue;
    std::string line = fmt::format("ring hop {} -> {} {}", rankLabel(h.from, hosts),
                                   rankLabel(h.to, hosts), issue);
    // The verdict line names a link between hosts before a fault inside one host.
    r.evidence.insert(
        crosses(h, hosts) && !cross_host_fault ? r.evidence.begin() : r.evidence.end(), line);
    cross_host_fault |= crosses(h, hosts);
    r.culprit.ranks.push_back(h.from);
    r.culprit.ranks.push_back(h.to);
    r.culprit.hosts.push_back(hostOf(h.from, hosts));
    r.culprit.hosts.push_back(hostOf(h.to, hosts));
    if (crosses(h, hosts))
      r.culprit.links.push_back(reports::linkName(hostOf(h.from, hosts), hostOf(h.to, hosts)));
  }
  return cross_host_fault;
}

}  // namespace

json runAllreduceProbe(transports::Transport& t, const ProbeOptions& o) {
  auto b = collectives::ScheduleBackend::create(t, {"ring", 0});
  Status s = b ? (*b)->allocate(kCollectiveProbeBytes, core::HostPages::kBase) : b.status();
  collectives::OpConfig op{collectives::Collective::kAllreduce,
                           kCollectiveProbeBytes / 4,
                           core::DataType::kFloat,
                           core::ReduceOp::kSum,
                           0,
                           nullptr};
  if (s.isOk()) s = (*b)->prepare(op);
  // Twice, the faster counting: the first run also pays for first touches and slow starts.
  double seconds = 1e30;
  for (int run = 0; run < 2 && s.isOk(); ++run) {
    int64_t t0 = core::nowNs();
    s = (*b)->run(false, Deadline::afterSeconds(o.timeout_s));
    seconds = std::min(seconds, (core::nowNs() - t0) / 1e9);
  }
  return {{"ok", s.isOk()},
          {"detail", s.isOk() ? "1 MiB allreduce completed" : s.message()},
          {"peer", s.peer()},
          {"seconds", seconds}};
}

ProbeResult judgeAllreduce(const std::vector<json>& per_rank, const std::string& transport,
                           const std::vector<std::string>& hosts) {
  ProbeResult r{
      Layer::kApplication, "allreduce over " + transport, ProbeOutcome::kPass, "", {}, {}, {}};
  const int n = static_cast<int>(per_rank.size());
  std::vector<int> failed, skipped, heads;
  std::string skip_reason;
  double slowest = 0;
  for (int k = 0; k < n; ++k) {
    const json& j = per_rank[k];
    if (!j.is_object()) continue;  // never reported: gather() names it
    if (j.contains("skipped")) {
      skipped.push_back(k);
      if (skip_reason.empty()) skip_reason = j.value("skipped", std::string());
    } else if (!j.value("ok", false)) {
      failed.push_back(k);
      r.evidence.push_back(
          fmt::format("{}: {}", rankLabel(k, hosts), j.value("detail", std::string())));
    } else {
      slowest = std::max(slowest, j.value("seconds", 0.0));
    }
  }
  for (int k : failed) {  // whom the failed ranks waited for, if that rank got through its side
    int p = per_rank[k].value("peer", -1);
    if (p >= 0 && p < n && per_rank[p].is_object() && per_rank[p].value("ok", false) &&
        !per_rank[p].contains("skipped") && std::find(heads.begin(), heads.end(), p) == heads.end())
      heads.push_back(p);
  }
  std::sort(heads.begin(), heads.end());
  if (!failed.empty()) {
    r.outcome = ProbeOutcome::kFail;
    r.culprit.ranks = heads.empty() ? failed : heads;
    for (int k : r.culprit.ranks) r.culprit.hosts.push_back(hostOf(k, hosts));
    r.detail = heads.empty()
                   ? fmt::format("allreduce failed on ranks {}", fmt::join(failed, ", "))
                   : fmt::format(
                         "rank(s) {} finished their side while ranks {} failed waiting in the "
                         "ring: a rank that skipped the collective or used another count",
                         fmt::join(heads, ", "), fmt::join(failed, ", "));
    r.next_step =
        "Check that every rank calls the same collectives in the same order with the same counts.";
  } else if (!skipped.empty()) {
    r.outcome = ProbeOutcome::kSkip;
    r.detail = fmt::format("skipped: {} (ranks {})", skip_reason, fmt::join(skipped, ", "));
  } else if (n == 1) {
    r.detail = "1 MiB allreduce completed (one rank: nothing crosses the transport)";
  } else {
    r.detail = fmt::format(
        "1 MiB allreduce completed on every rank in {:.1f} ms ({:.3f} GB/s bus bandwidth)",
        slowest * 1e3, busGbps(n, slowest));
  }
  return r;
}

std::string bisectionReason(const std::vector<json>& per_rank,
                            const std::vector<std::string>& hosts, double pair_median_gbps) {
  const int n = static_cast<int>(per_rank.size());
  bool failed = false;
  double slowest = 0;
  for (const json& j : per_rank) {
    if (!j.is_object() || j.contains("skipped")) return "";
    failed |= !j.value("ok", false);
    slowest = std::max(slowest, j.value("seconds", 0.0));
  }
  if (failed) return "the allreduce failed";
  std::set<std::string> distinct(hosts.begin(), hosts.end());
  double bus = busGbps(n, slowest);
  if (distinct.size() < 2 || pair_median_gbps <= 0 || bus >= kSlowHopFraction * pair_median_gbps)
    return "";
  return fmt::format(
      "the allreduce ran at {:.3f} GB/s bus bandwidth, under a quarter of the pairs' median {:.3f} "
      "GB/s",
      bus, pair_median_gbps);
}

json measureRingHops(transports::Transport& t, const ProbeOptions& o, size_t bytes) {
  const int n = t.size(), me = t.rank();
  json out = json::array();
  if (n < 2) return out;
  core::HostBuffer buf(std::max(bytes, kMaxTimedBytes));
  auto mr = t.registerMemory(buf.data(), buf.size());
  if (!mr) return out;
  // Two passes over the ring, so a hop is only slow if it is slow twice, some time apart: one
  // pass's few milliseconds on a hop can fall into a scheduling stall of a busy host. A hop that
  // failed is not measured again (that would only wait out a second deadline), and its sender
  // skips one whose first pass was surely slow.
  std::vector<int> mine;        // the hops this rank is an end of, in hop order
  std::vector<double> first_s;  // as the sender: the first pass's best time of each
  for (int h = 0; h < n; ++h)
    if (me == h || me == (h + 1) % n) mine.push_back(h);
  for (int pass = 0; pass < kHopPasses; ++pass)
    for (size_t k = 0; k < mine.size(); ++k) {
      const int h = mine[k], from = h, to = (h + 1) % n;
      if (pass > 0 && !out[k].value("ok", false)) continue;
      // The hops before this one, in this pass and the ones before, may each take up to a probe
      // deadline.
      PairIo io{t, mr->region(), o.timeout_s,
                Deadline::afterSeconds(o.timeout_s * (n * (pass + 1) + 1))};
      double best_s = 0;
      size_t first = pass > 0 && me == from && first_s[k] >= kSurelySlowSeconds ? 0 : bytes;
      size_t measured = 0;
      Status s = timeHop(io, me == from ? to : from, me == from, first, measured, best_s);
      if (pass == 0) {
        out.push_back(
            {{"hop", h}, {"role", me == from ? "send" : "recv"}, {"peer", me == from ? to : from}});
        first_s.push_back(s.isOk() ? best_s : 0);
      }
      json& rec = out[k];
      if (!s.isOk()) {
        rec["ok"] = false;
        rec["error"] = pass == 0 ? s.message() : fmt::format("pass {}: {}", pass + 1, s.message());
      } else if (pass == 0) {
        rec["ok"] = true;
      }
      if (s.isOk() && me == from && measured > 0) {
        rec["passes"].push_back(measured / best_s / 1e9);
        rec["gbps"] = std::max(rec.value("gbps", 0.0), measured / best_s / 1e9);
      }
    }
  return out;
}

ProbeResult judgeRingHops(const std::vector<json>& per_rank, const std::vector<std::string>& hosts,
                          const std::string& transport, const std::string& reason) {
  ProbeResult r{
      Layer::kHostNetwork, "ring hops over " + transport, ProbeOutcome::kPass, "", {}, {}, {}};
  std::vector<Hop> hops = hopsFrom(per_rank);
  // Only hops between hosts are judged for speed, so they are compared with each other: a hop
  // inside one host runs over loopback or shared memory, and including those made the median a
  // loopback speed that every healthy network hop was under a quarter of.
  std::vector<double> rates, network_rates;
  for (const Hop& h : hops)
    if (h.measured && h.ok && h.gbps > 0) {
      rates.push_back(h.gbps);
      if (crosses(h, hosts)) network_rates.push_back(h.gbps);
    }
  const double med = medianOf(network_rates.empty() ? rates : network_rates);
  bool cross_host_fault = blameHops(hops, hosts, med, r);
  if (rates.empty() && r.evidence.empty()) {
    r.outcome = ProbeOutcome::kSkip;
    r.detail = "skipped: no hop could be measured";
    return r;
  }
  if (r.evidence.empty()) {
    auto slowest = std::min_element(hops.begin(), hops.end(), [](const Hop& a, const Hop& b) {
      return (a.gbps > 0 ? a.gbps : 1e30) < (b.gbps > 0 ? b.gbps : 1e30);
    });
    r.detail = fmt::format(
        "{}, but every hop delivers: median {:.3f} GB/s, slowest {:.3f} GB/s ({} -> {})", reason,
        med, slowest->gbps, rankLabel(slowest->from, hosts), rankLabel(slowest->to, hosts));
    return r;
  }
  r.outcome = ProbeOutcome::kFail;
  r.layer =
      cross_host_fault ? Layer::kHostNetwork : Layer::kLibrary;  // one host: the transport itself
  r.detail = r.evidence.front();
  r.evidence.push_back("bisected because " + reason);
  if (!cross_host_fault)
    r.next_step = fmt::format(
        "The {} transport between two processes of one host failed: check /dev/shm, "
        "ptrace/process_vm_readv permissions and the ranks' stderr.",
        transport);
  return r;
}

}  // namespace ccscope::diagnostics
