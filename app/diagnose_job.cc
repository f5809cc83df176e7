#include "app/diagnose_job.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "app/command.h"
#include "app/diagnose_deadlines.h"
#include "app/job_launch.h"
#include "app/rendezvous.h"
#include "app/run_metadata.h"
#include "diagnostics/live/clock_skew.h"
#include "diagnostics/live/collective_probe.h"
#include "diagnostics/live/hang_diagnosis.h"
#include "diagnostics/live/library_init.h"
#include "launch/host_identity.h"
#ifdef CCSCOPE_HAVE_MPI
#include "collectives/baselines/mpi/mpi_runtime.h"
#endif

namespace ccscope::app {

using core::Deadline;
using core::Layer;
using core::Status;
using diagnostics::ProbeOutcome;
using diagnostics::ProbeResult;
using nlohmann::json;

namespace {

// The resolved path, so ps shows "ccscope"; /proc/self/exe when the binary was replaced since.
std::string selfExecutable() {
  char self[4096] = {0};
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string path = n > 0 ? std::string(self, n) : "";
  bool gone = path.empty() || path.ends_with(" (deleted)") || access(path.c_str(), X_OK) != 0;
  return gone ? "/proc/self/exe" : path;
}

struct RankState {
  const DiagnoseOptions& o;
  launch::StoreClient& c;
  const launch::LaunchInfo& info;
  std::vector<std::string> hosts;
  std::vector<ProbeResult> results;  // rank 0
  std::vector<json> connects;        // rank 0: every rank's tcp connect outcome
  std::vector<json> pairs;           // rank 0: every rank's pair measurements
  int most_on_one_machine = 0;       // the most ranks on one machine, once hosts are known
  bool root() const { return c.rank() == 0; }
  double wait(DiagPhase p, int transports = 0) const {
    return diagPhaseSeconds(p, o.probe.timeout_s, c.size(), transports);
  }
  void post(const std::string& key, const json& v) {
    c.put(fmt::format("diag/{}/{}", key, c.rank()), v.dump()).ignore();
  }
  // What rank 0 posted under `key` (a plan the other ranks follow); null when it never came.
  json fromRoot(const std::string& key, double wait_s) {
    auto v = c.get(fmt::format("diag/{}/0", key), Deadline::afterSeconds(wait_s));
    return v ? json::parse(*v, nullptr, false) : json();
  }
  // Rank 0: every rank's value, naming ranks that never posted (they hung in that probe).
  std::vector<json> collect(const std::string& key, Layer layer, const std::string& probe,
                            DiagPhase phase = DiagPhase::kGather) {
    std::vector<int> missing;
    auto v = diagnostics::gather(c, key, wait(phase), &missing);
    if (!missing.empty() || !v) {
      ProbeResult r{
          layer, probe, ProbeOutcome::kFail, "ranks that did not finish the probe in time", {},
          {},    {}};
      for (int m : missing) {
        r.culprit.ranks.push_back(m);
        r.evidence.push_back(
            fmt::format("rank {} ({}) never reported", m, m < (int)hosts.size() ? hosts[m] : "?"));
      }
      results.push_back(r);
    }
    return v ? *v : std::vector<json>(c.size());
  }
};

int report(const RankState& st) {
  reports::Diagnosis d = diagnostics::diagnosisOf(st.results);
  for (const ProbeResult& r : st.results)
    std::printf("%-4s %-12s %-22s %s\n", diagnostics::outcomeName(r.outcome),
                core::layerName(r.layer), r.name.c_str(), r.detail.c_str());
  std::printf("\n%s", diagnostics::renderDiagnosis(d).c_str());
  for (const auto& e : d.evidence) std::printf("  evidence: %s\n", e.text.c_str());
  if (!st.o.json_path.empty()) {
    json j = reports::toJson(d);
    j["type"] = "diagnosis";
    std::ofstream(st.o.json_path) << j.dump() << "\n";
  }
  return d.layer == Layer::kNone ? kExitOk : kExitFailed;
}

// A rank's host as gathered: its hostname, boot/network-namespace key and the address it reaches
// the store from; every rank turns them into the same labels (launch/host_identity.h).
launch::HostIdentity identityOf(const json& j) {
  if (!j.is_object()) return {"?", "", ""};
  return {j.value("name", "?"), j.value("key", ""), j.value("addr", "")};
}

void exchangeHosts(RankState& st) {
  const launch::HostIdentity& self = launch::localHostIdentity();
  st.post("host", json{{"name", self.name}, {"key", self.key}, {"addr", st.c.localAddress()}});
  std::vector<launch::HostIdentity> ids;
  if (st.root()) {
    for (const json& h : st.collect("host", Layer::kBootstrap, "rendezvous"))
      ids.push_back(identityOf(h));
    st.hosts = launch::hostLabels(ids);
    st.most_on_one_machine = launch::mostRanksOnOneMachine(ids);
    st.results.push_back({Layer::kBootstrap,
                          "rendezvous",
                          ProbeOutcome::kPass,
                          fmt::format("{} ranks joined", st.c.size()),
                          {},
                          {},
                          {}});
    return;
  }
  for (int r = 0; r < st.c.size(); ++r) {
    auto h = st.c.get(fmt::format("diag/host/{}", r),
                      Deadline::afterSeconds(st.wait(DiagPhase::kHosts)));
    ids.push_back(identityOf(h ? json::parse(*h, nullptr, false) : json()));
  }
  st.hosts = launch::hostLabels(ids);
  st.most_on_one_machine = launch::mostRanksOnOneMachine(ids);
}

diagnostics::MpiState mpiState(const launch::LaunchInfo& info, std::string& version) {
  if (info.source != launch::LaunchSource::kOpenMpi) return diagnostics::MpiState::kNotLaunched;
#ifdef CCSCOPE_HAVE_MPI
  if (!collectives::mpi::initialized()) return diagnostics::MpiState::kDown;
  version = collectives::mpi::libraryVersion();
  return diagnostics::MpiState::kUp;
#else
  (void)version;
  return diagnostics::MpiState::kNotCompiled;
#endif
}

// Local facts, then each library initialised in a helper process (this binary again).
void localAndLibraries(RankState& st, const launch::LaunchInfo& info) {
  json facts = diagnostics::localFacts(st.o.probe);
  st.post("local", facts);
  if (st.root())
    for (auto& r : diagnostics::judgeLocalFacts(st.collect("local", Layer::kLibrary, "local facts"),
                                                st.hosts))
      st.results.push_back(r);
  diagnostics::LibraryInitContext ctx;
  ctx.child_command = {selfExecutable(), "diagnose", "--library-init-child"};
  ctx.timeout_s = st.o.probe.timeout_s;
  ctx.gpu_usable =
      facts.value("components", json::object()).value("cuda", json::object()).value("devices", 0) >
      0;
  ctx.local_rank = info.local_rank;
  ctx.mpi = mpiState(info, ctx.mpi_version);
  st.post("library", diagnostics::runLibraryInit(ctx));
  if (st.root())
    for (auto& r : diagnostics::judgeLibraryInit(
             st.collect("library", Layer::kLibrary, "library init"), st.hosts))
      st.results.push_back(r);
}

// Every transport the probes make has the options the job's bench would give it.
Status connectTransport(RankState& st, const std::string& name, double timeout_s,
                        std::unique_ptr<transports::Transport>& out) {
  auto t = transports::makeTransport(
      name, jobTransportOptions(st.info, st.c, st.o.probe.ifname, 1, st.most_on_one_machine,
                                st.o.shm_single_copy_from));
  Status s = t ? (*t)->connect(st.c, Deadline::afterSeconds(timeout_s)) : t.status();
  if (t) out = std::move(*t);
  return s;
}

// The transports the collective probe runs over, by name; null where one did not connect.
struct TransportSet {
  std::vector<std::pair<std::string, std::unique_ptr<transports::Transport>>> all;
  std::map<std::string, std::string> why_not;
  std::vector<std::unique_ptr<transports::Transport>> keep;  // bisection's fresh transports
  transports::Transport* get(const std::string& name) {
    for (auto& [n, t] : all)
      if (n == name) return t.get();
    return nullptr;
  }
};

// The transport the job would use; --ifname wins over the address that reaches the store.
// Rank 0 gathers every rank's outcome right away: the probes after it need to know who is in.
Status connectTcp(RankState& st, std::unique_ptr<transports::Transport>& out) {
  Status s = connectTransport(st, "tcp", st.wait(DiagPhase::kConnect), out);
  st.post("connect", json{{"ok", s.isOk()}, {"error", s.message()}, {"peer", s.peer()}});
  if (st.root()) {
    st.connects = st.collect("connect", Layer::kHostNetwork, "tcp connect");
    st.results.push_back(diagnostics::judgeConnects(st.connects, st.hosts));
  }
  return s;
}

// Rank 0 times a few ping-pongs with every rank that connected and posts whom it will ask, so
// a rank never waits for pings that will not come (and never answers out of turn).
void clockSkew(RankState& st, transports::Transport* t, bool connected) {
  const int n = st.c.size();
  if (!st.root()) {
    if (!connected) return;
    json plan = st.fromRoot("clockplan", st.wait(DiagPhase::kClockPlan));
    if (plan.is_array() && std::find(plan.begin(), plan.end(), json(st.c.rank())) != plan.end())
      diagnostics::answerClockSkew(*t, st.o.probe, st.wait(DiagPhase::kClockAnswer)).ignore();
    return;
  }
  std::vector<int> peers;
  for (int r = 1; connected && r < n; ++r)
    if (st.connects[r].is_object() && st.connects[r].value("ok", false)) peers.push_back(r);
  st.post("clockplan", peers);
  if (!connected) {
    st.results.push_back({Layer::kBootstrap,
                          "clock skew",
                          ProbeOutcome::kSkip,
                          "skipped: the tcp transport did not connect on rank 0",
                          {},
                          {},
                          {}});
    return;
  }
  auto measured = diagnostics::measureClockSkew(*t, peers, st.o.probe);
  st.results.push_back(
      diagnostics::judgeClockSkew(measured, st.hosts, st.o.probe.max_clock_skew_s));
}

// Every pair once; then, as rank 0 plans, a second pass over the pairs the first found slow.
void pairs(RankState& st, transports::Transport* t, bool connected) {
  json mine = connected ? diagnostics::measurePairs(*t, st.hosts, st.o.probe) : json::array();
  st.post("pairs", mine);
  json plan;
  if (st.root()) {
    st.pairs = st.collect("pairs", Layer::kHostNetwork, "pairs", DiagPhase::kPairs);
    plan = diagnostics::pairsToRecheck(st.pairs, st.hosts);
    st.post("pairplan", plan);
  } else {
    plan = st.fromRoot("pairplan", st.wait(DiagPhase::kPairPlan));
  }
  if (plan.is_array() && !plan.empty()) {
    st.post("pairs2",
            connected ? diagnostics::measurePairs(*t, st.hosts, st.o.probe, plan) : json::array());
    if (st.root())
      diagnostics::mergeRecheck(
          st.pairs, st.collect("pairs2", Layer::kHostNetwork, "pairs", DiagPhase::kPairs));
  }
  if (st.root()) st.results.push_back(diagnostics::judgePairs(st.pairs, st.hosts));
}

// tcp always; shm too when every rank is on one host.
std::vector<std::string> collectiveTransports(const RankState& st) {
  return diagnostics::allOnOneHost(st.hosts) ? std::vector<std::string>{"tcp", "shm"}
                                             : std::vector<std::string>{"tcp"};
}

std::string noBisectionWhy(ProbeOutcome allreduce, bool one_host) {
  if (allreduce != ProbeOutcome::kPass)
    return "skipped: not every rank took part in the allreduce (the lines above say why)";
  return one_host ? "not needed: the allreduce passed (one host: its speed is not judged)"
                  : "not needed: the allreduce passed at the speed the pairs allow";
}

// Every rank runs the allreduce over each transport (the test-only switch makes one rank skip
// it); rank 0 judges and says which rings to bisect.
json allreduces(RankState& st, TransportSet& ts) {
  for (auto& [name, t] : ts.all) {
    json mine =
        !t ? json{{"skipped", ts.why_not[name]}}
        : st.c.rank() == st.o.probe.testonly_skip_collective_rank
            ? json{{"ok", true}, {"detail", "skipped (test-only)"}, {"peer", -1}, {"seconds", 0}}
            : diagnostics::runAllreduceProbe(*t, st.o.probe);
    st.post("coll-" + name, mine);
  }
  if (!st.root())
    return st.fromRoot("hopplan", st.wait(DiagPhase::kHopPlan, static_cast<int>(ts.all.size())));
  json plan = json::object();
  double pair_median = diagnostics::pairMedianGbps(st.pairs);
  for (auto& [name, t] : ts.all) {
    auto per_rank = st.collect("coll-" + name, Layer::kApplication, "allreduce over " + name);
    st.results.push_back(diagnostics::judgeAllreduce(per_rank, name, st.hosts));
    std::string why = diagnostics::bisectionReason(per_rank, st.hosts, pair_median);
    if (!why.empty())
      plan[name] = {{"reason", why}, {"fresh", st.results.back().outcome == ProbeOutcome::kFail}};
    else
      st.results.push_back(
          {Layer::kHostNetwork,
           "ring hops over " + name,
           ProbeOutcome::kSkip,
           noBisectionWhy(st.results.back().outcome, diagnostics::allOnOneHost(st.hosts)),
           {},
           {},
           {}});
  }
  st.post("hopplan", plan);
  return plan;
}

// Bisects each ring rank 0 asked for: over the same transport when the allreduce only ran slow,
// over a fresh one when it failed (the failed one may hold half-delivered messages).
void bisect(RankState& st, TransportSet& ts, const json& plan) {
  for (const auto& entry : ts.all) {  // in transport order, as the allreduce lines
    const std::string& name = entry.first;
    if (!plan.is_object() || !plan.contains(name)) continue;
    const json& item = plan[name];
    std::string reason = item.value("reason", std::string());
    if (name == "shm") {  // shm segments are named per job: a second shm transport cannot connect
      if (st.root())
        st.results.push_back(
            {Layer::kHostNetwork,
             "ring hops over shm",
             ProbeOutcome::kSkip,
             "skipped: a shm transport cannot be set up twice in one job; " + reason,
             {},
             {},
             {}});
      continue;
    }
    transports::Transport* t = ts.get(name);
    std::unique_ptr<transports::Transport> fresh;
    if (item.value("fresh", false)) {
      t = connectTransport(st, name, st.wait(DiagPhase::kFreshConnect), fresh).isOk() ? fresh.get()
                                                                                      : nullptr;
      ts.keep.push_back(std::move(fresh));
    }
    st.post("hops-" + name,
            t ? diagnostics::measureRingHops(*t, st.o.probe, diagnostics::kCollectiveProbeBytes)
              : json::array());
    if (st.root())
      st.results.push_back(
          diagnostics::judgeRingHops(st.collect("hops-" + name, Layer::kHostNetwork,
                                                "ring hops over " + name, DiagPhase::kHops),
                                     st.hosts, name, reason));
  }
}

void collectives(RankState& st, std::unique_ptr<transports::Transport>& tcp, bool tcp_ok,
                 TransportSet& ts) {
  for (const std::string& name : collectiveTransports(st)) {
    std::unique_ptr<transports::Transport> t;
    if (name == "tcp") {
      if (tcp_ok)
        t = std::move(tcp);
      else
        ts.why_not[name] = "the tcp transport did not connect";
    } else if (Status s = connectTransport(st, name, st.wait(DiagPhase::kConnect), t); !s.isOk()) {
      ts.why_not[name] = fmt::format("the {} transport did not connect: {}", name, s.message());
      t.reset();
    }
    ts.all.emplace_back(name, std::move(t));
  }
  bisect(st, ts, allreduces(st, ts));
}

int finish(RankState& st, Rendezvous& rv) {
  if (!st.root()) {  // every rank exits with the verdict rank 0 reached
    auto v = st.c.get("diag/verdict", Deadline::afterSeconds(st.wait(DiagPhase::kVerdict)));
    st.c.finish();
    return v ? std::atoi(v->c_str()) : kExitHang;
  }
  int code = report(st);
  st.c.put("diag/verdict", std::to_string(code)).ignore();
  st.c.finish();
  lingerWhileOthersNeedTheStore(rv, 0);
  return code;
}

}  // namespace

int runDiagnoseRank(const DiagnoseOptions& o, const launch::LaunchInfo& info) {
  Rendezvous rv;
  const double join_s = diagPhaseSeconds(DiagPhase::kJoin, o.probe.timeout_s, info.size);
  if (Status s = joinRendezvous(info, o.store_bind, join_s, rv); !s.isOk()) {
    std::fprintf(stderr, "FAIL bootstrap    rendezvous: %s\n", s.message().c_str());
    return kExitFailed;
  }
  RankState st{o, *rv.client, info, {}, {}, {}, {}, 0};
  exchangeHosts(st);
  localAndLibraries(st, info);
  std::unique_ptr<transports::Transport> tcp;
  bool connected = connectTcp(st, tcp).isOk();
  clockSkew(st, tcp.get(), connected);
  pairs(st, tcp.get(), connected);
  TransportSet ts;  // kept until the verdict: a peer may still be reading from us before it
  collectives(st, tcp, connected, ts);
  int code = finish(st, rv);
  ts = TransportSet();
#ifdef CCSCOPE_HAVE_MPI
  collectives::mpi::finalize();  // under mpirun: a rank that exits without it fails the job
#endif
  return code;
}

}  // namespace ccscope::app
