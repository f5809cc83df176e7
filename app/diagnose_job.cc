#include "app/diagnose_job.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "app/command.h"
#include "app/rendezvous.h"
#include "app/run_metadata.h"
#include "collectives/schedule_backend.h"
#include "diagnostics/live/hang_diagnosis.h"

namespace ccscope::app {

using core::Deadline;
using core::Layer;
using core::Status;
using diagnostics::ProbeOutcome;
using diagnostics::ProbeResult;
using nlohmann::json;

namespace {

struct RankState {
  const DiagnoseOptions& o;
  launch::StoreClient& c;
  std::vector<std::string> hosts;
  std::vector<ProbeResult> results;  // rank 0
  void post(const std::string& key, const json& v) {
    c.put(fmt::format("diag/{}/{}", key, c.rank()), v.dump()).ignore();
  }
  // Rank 0: every rank's value, naming ranks that never posted (they hung in that probe).
  std::vector<json> collect(const std::string& key, Layer layer, const std::string& probe,
                            double wait_s = 0) {
    std::vector<int> missing;
    auto v = diagnostics::gather(c, key, wait_s > 0 ? wait_s : o.probe.timeout_s * 2, &missing);
    if (!missing.empty() || !v) {
      ProbeResult r{layer, probe, ProbeOutcome::kFail, "ranks that did not finish the probe in time", {}, {}};
      for (int m : missing) {
        r.culprit.ranks.push_back(m);
        r.evidence.push_back(fmt::format("rank {} ({}) never reported", m, m < (int)hosts.size() ? hosts[m] : "?"));
      }
      results.push_back(r);
    }
    return v ? *v : std::vector<json>(c.size());
  }
};

ProbeResult collectiveProbe(RankState& st, transports::Transport& t, const std::string& name) {
  ProbeResult r{Layer::kApplication, "allreduce over " + name, ProbeOutcome::kPass, "", {}, {}};
  auto b = collectives::ScheduleBackend::create(t, {"ring", 0});
  Status s = b ? (*b)->allocate(1 << 20) : b.status();
  collectives::OpConfig op{collectives::Collective::kAllreduce, (1 << 20) / 4, core::DataType::kFloat,
                           core::ReduceOp::kSum, 0, nullptr};
  if (s.isOk()) s = (*b)->prepare(op);
  if (s.isOk()) s = (*b)->run(false, Deadline::afterSeconds(st.o.probe.timeout_s));
  if (!s.isOk()) {
    r.outcome = ProbeOutcome::kFail;
    r.detail = s.message();
    if (s.peer() >= 0) r.culprit.ranks.push_back(s.peer());
  } else {
    r.detail = "1 MiB allreduce completed";
  }
  return r;
}

reports::Diagnosis verdict(const std::vector<ProbeResult>& results) {
  reports::Diagnosis d;
  d.layer = Layer::kNone;
  d.conclusive = true;
  d.confidence = "high";
  d.verdict = "every layer passed";
  d.next_step = "nothing to do";
  static const Layer kOrder[] = {Layer::kBootstrap, Layer::kHostNetwork, Layer::kRdma, Layer::kGpu,
                                 Layer::kLibrary, Layer::kApplication};
  for (Layer l : kOrder)
    for (const ProbeResult& r : results)
      if (r.layer == l && r.outcome == ProbeOutcome::kFail && d.layer == Layer::kNone) {
        d.layer = l;
        d.verdict = fmt::format("{}: {}", r.name, r.detail);
        d.culprit = r.culprit;
        d.culprit.dedupe();
        for (const auto& e : r.evidence) d.evidence.push_back({"", 0, e});
        d.next_step = l == Layer::kHostNetwork ? "Check the named hosts' links, routes, firewall and the interface the job uses."
                                               : "Fix the named configuration, then rerun ccscope diagnose.";
      }
  for (const ProbeResult& r : results) {
    reports::Finding f;
    f.id = r.name;
    f.layer = r.layer;
    f.kind = r.outcome == ProbeOutcome::kFail ? reports::FindingKind::kRoot : reports::FindingKind::kContext;
    f.verdict = fmt::format("{} {}: {}", diagnostics::outcomeName(r.outcome), r.name, r.detail);
    f.culprit = r.culprit;
    d.findings.push_back(f);
  }
  return d;
}

int report(const RankState& st) {
  reports::Diagnosis d = verdict(st.results);
  for (const ProbeResult& r : st.results)
    std::printf("%-4s %-12s %-22s %s\n", diagnostics::outcomeName(r.outcome), core::layerName(r.layer),
                r.name.c_str(), r.detail.c_str());
  std::printf("\n%s", diagnostics::renderDiagnosis(d).c_str());
  for (const auto& e : d.evidence) std::printf("  evidence: %s\n", e.text.c_str());
  if (!st.o.json_path.empty()) {
    json j = reports::toJson(d);
    j["type"] = "diagnosis";
    std::ofstream(st.o.json_path) << j.dump() << "\n";
  }
  return d.layer == Layer::kNone ? kExitOk : kExitFailed;
}

}  // namespace

int runDiagnoseRank(const DiagnoseOptions& o, const launch::LaunchInfo& info) {
  Rendezvous rv;
  if (Status s = joinRendezvous(info, o.store_bind, o.probe.timeout_s * 2, rv); !s.isOk()) {
    std::fprintf(stderr, "FAIL bootstrap    rendezvous: %s\n", s.message().c_str());
    return kExitFailed;
  }
  RankState st{o, *rv.client, {}, {}};
  st.post("host", hostName());
  if (info.rank == 0)
    for (const json& h : st.collect("host", Layer::kBootstrap, "rendezvous"))
      st.hosts.push_back(h.is_string() ? h.get<std::string>() : "?");
  else
    for (int r = 0; r < info.size; ++r) {
      auto h = rv.client->get(fmt::format("diag/host/{}", r), Deadline::afterSeconds(o.probe.timeout_s));
      st.hosts.push_back(h ? json::parse(*h, nullptr, false).get<std::string>() : "?");
    }
  if (info.rank == 0) st.results.push_back({Layer::kBootstrap, "rendezvous", ProbeOutcome::kPass,
                                            fmt::format("{} ranks joined", info.size), {}, {}});
  st.post("local", diagnostics::localFacts(o.probe));
  if (info.rank == 0)
    for (auto& r : diagnostics::judgeLocalFacts(st.collect("local", Layer::kLibrary, "local facts"), st.hosts))
      st.results.push_back(r);
  // Host network: the transport the job would use, then every pair of hosts.
  // --ifname wins over the address that reaches the store.
  transports::TransportOptions to{info.size, 1, o.probe.ifname,
                                  o.probe.ifname.empty() ? rv.client->localAddress() : "", 0};
  auto t = transports::makeTransport("tcp", to);
  Status s = t ? (*t)->connect(*rv.client, Deadline::afterSeconds(o.probe.timeout_s)) : t.status();
  st.post("connect", json{{"ok", s.isOk()}, {"error", s.message()}, {"peer", s.peer()}});
  json pairs = s.isOk() ? diagnostics::measurePairs(**t, st.hosts, o.probe) : json::array();
  st.post("pairs", pairs);
  if (s.isOk()) {
    ProbeResult coll = collectiveProbe(st, **t, "tcp");
    st.post("collective", json{{"ok", coll.outcome == ProbeOutcome::kPass}, {"detail", coll.detail}});
  }
  if (info.rank != 0) {  // every rank exits with the verdict rank 0 reached
    auto v = rv.client->get("diag/verdict", Deadline::afterSeconds(o.probe.timeout_s * 4));
    rv.client->finish();
    return v ? std::atoi(v->c_str()) : kExitHang;
  }
  ProbeResult conn{Layer::kHostNetwork, "tcp connect", ProbeOutcome::kPass, "every rank connected", {}, {}};
  auto connects = st.collect("connect", Layer::kHostNetwork, "tcp connect");
  // A rank that could not connect out is the root; ranks that waited for it to accept are symptoms.
  auto active = [](const json& j) { return j.value("error", std::string()).find("connecting to") != std::string::npos; };
  bool any_active = std::any_of(connects.begin(), connects.end(), [&](const json& j) {
    return j.is_object() && !j.value("ok", true) && active(j);
  });
  for (size_t r = 0; r < connects.size(); ++r)
    if (connects[r].is_object() && !connects[r].value("ok", true) && (!any_active || active(connects[r]))) {
      conn.outcome = ProbeOutcome::kFail;
      conn.detail = "ranks that could not connect to their peers";
      conn.culprit.ranks.push_back(static_cast<int>(r));
      int peer = connects[r].value("peer", -1);
      if (peer >= 0 && peer < static_cast<int>(st.hosts.size())) {  // the pair that failed
        conn.culprit.ranks.push_back(peer);
        conn.culprit.hosts = {st.hosts[r], st.hosts[peer]};
        conn.culprit.links.push_back(fmt::format("{} <-> {}", std::min(st.hosts[r], st.hosts[peer]),
                                                 std::max(st.hosts[r], st.hosts[peer])));
      }
      conn.evidence.push_back(fmt::format("rank {}: {}", r, connects[r].value("error", std::string())));
    }
  st.results.push_back(conn);
  // Pairs run one after another: a rank with many slow pairs may need up to n probe deadlines.
  st.results.push_back(diagnostics::judgePairs(
      st.collect("pairs", Layer::kHostNetwork, "pairs", o.probe.timeout_s * (info.size + 1)), st.hosts));
  if (s.isOk()) {
    ProbeResult coll{Layer::kApplication, "allreduce over tcp", ProbeOutcome::kPass, "", {}, {}};
    auto colls = st.collect("collective", Layer::kApplication, "allreduce over tcp");
    for (size_t r = 0; r < colls.size(); ++r)
      if (colls[r].is_object() && !colls[r].value("ok", true)) {
        coll.outcome = ProbeOutcome::kFail;
        coll.culprit.ranks.push_back(static_cast<int>(r));
        coll.evidence.push_back(fmt::format("rank {}: {}", r, colls[r].value("detail", std::string())));
      }
    coll.detail = coll.outcome == ProbeOutcome::kPass ? "1 MiB allreduce completed on every rank" : "allreduce failed";
    st.results.push_back(coll);
  }
  int code = report(st);
  rv.client->put("diag/verdict", std::to_string(code)).ignore();
  rv.client->finish();
  lingerWhileOthersNeedTheStore(rv, 0);
  return code;
}

}  // namespace ccscope::app
