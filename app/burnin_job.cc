#include "app/burnin_job.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/burnin_phases.h"
#include "app/command.h"
#include "app/failure_report.h"
#include "app/job_launch.h"
#include "app/pairs_job.h"
#include "app/pairs_report.h"
#include "app/rank_job.h"
#include "app/rendezvous.h"
#include "app/run_metadata.h"
#include "bench/sweep.h"
#include "diagnostics/live/probes.h"
#include "launch/environment.h"
#include "reports/report_set.h"
#include "reports/table_writer.h"

namespace ccscope::app {

using core::Deadline;
using core::Status;
using nlohmann::json;

namespace {

// A pair_verdict's figure as the pairs table says it.
std::string shareText(const json& v) {
  const double share = v.value("share", 1.0);
  if (v.value("metric", "") == "p99")
    return fmt::format("p99 {:.1f}x what its partners predict", share > 0 ? 1 / share : 0.0);
  return fmt::format("bandwidth {:.3g}x what its partners predict", share);
}

class BurninRank {
 public:
  BurninRank(const BurninOptions& o, const launch::LaunchInfo& info)
      : o_(o), p_(o.profile), info_(info) {}
  int run();

 private:
  Status setUp();
  Status preflight(std::vector<std::string>& reasons);
  Status connect();
  Status pairs();
  Status sweeps();
  Status sweep(size_t index);
  int invalid(const std::vector<std::string>& reasons);
  int summarize();
  int fail(const Status& s);
  bool root() const { return info_.rank == 0; }
  BurninContext context() {
    return {p_,
            *rv_.client,
            *t_,
            reg_.region(),
            hosts_,
            json_.get(),
            sampler_.get(),
            latency_unjudged_};
  }

  const BurninOptions& o_;
  const burnin::Profile& p_;
  launch::LaunchInfo info_;
  Rendezvous rv_;
  std::vector<std::string> hosts_;
  int most_on_one_machine_ = 0;
  // Why p99 is not judged ("" where it is): the most crowded machine's ranks outnumber its CPUs.
  std::string latency_unjudged_;
  transports::TransportOptions measured_;
  std::unique_ptr<transports::Transport> t_;
  std::unique_ptr<collectives::HarnessChannel> harness_;
  std::unique_ptr<collectives::CollectiveBackend> sampler_;
  std::vector<char> mem_;
  transports::Registration reg_;
  std::unique_ptr<reports::JsonLinesWriter> json_;
  std::vector<std::string> phases_;
  json pairs_summary_;                   // rank 0
  std::vector<BurninFinding> findings_;  // rank 0
};

Status BurninRank::setUp() {
  CCSCOPE_RETURN_IF_ERROR(joinRendezvous(info_, o_.store_bind, p_.timeout_s, rv_));
  CCSCOPE_ASSIGN_OR_RETURN(GatheredHosts gathered, gatherHosts(*rv_.client, p_.timeout_s));
  hosts_ = gathered.labels;
  most_on_one_machine_ = gathered.most_on_one_machine;
  latency_unjudged_ = latencyUnjudged(gathered.crowded.ranks, gathered.crowded.cpus);
  if (root() && !o_.json_path.empty()) {
    CCSCOPE_ASSIGN_OR_RETURN(json_, reports::JsonLinesWriter::open(o_.json_path));
  }
  if (root()) {
    json run = {{"type", "burnin_run"},
                {"version", CCSCOPE_VERSION},
                {"profile", p_.name},
                {"profile_file", p_.source},
                {"transport", p_.transport},
                {"ranks", hosts_.size()},
                {"hosts", hosts_}};
    if (json_) json_->write(run);
    std::printf("# ccscope %s burnin: profile '%s' (%s) over %s, %zu ranks\n", CCSCOPE_VERSION,
                p_.name.c_str(), p_.source.c_str(), p_.transport.c_str(), hosts_.size());
    std::fflush(stdout);
  }
  return Status::ok();
}

// Every rank's local facts (interface, /dev/shm, memlock, libraries, RDMA and GPU layers),
// judged by rank 0 as `ccscope diagnose` judges them; a failing probe, or a rank that never
// reports, makes the run invalid. Every rank learns the outcome from rank 0.
Status BurninRank::preflight(std::vector<std::string>& reasons) {
  launch::StoreClient& c = *rv_.client;
  diagnostics::ProbeOptions po;
  po.timeout_s = std::min(p_.timeout_s, 10.0);
  po.ifname = p_.ifname;
  CCSCOPE_RETURN_IF_ERROR(c.put(fmt::format("diag/burnin-preflight/{}", info_.rank),
                                diagnostics::localFacts(po).dump()));
  const std::string key = "burnin/preflight";
  if (root()) {
    std::vector<int> missing;
    auto facts = diagnostics::gather(c, "burnin-preflight", 4 * po.timeout_s, &missing);
    for (int m : missing) reasons.push_back(fmt::format("rank {} never reported its facts", m));
    std::vector<diagnostics::ProbeResult> results;
    if (facts) results = diagnostics::judgeLocalFacts(*facts, hosts_);
    std::printf("#\n# preflight\n");
    for (const diagnostics::ProbeResult& r : results) {
      std::printf("%-4s %-12s %-22s %s\n", diagnostics::outcomeName(r.outcome),
                  core::layerName(r.layer), r.name.c_str(), r.detail.c_str());
      if (json_)
        json_->write({{"type", "preflight"},
                      {"layer", core::layerName(r.layer)},
                      {"probe", r.name},
                      {"outcome", diagnostics::outcomeName(r.outcome)},
                      {"detail", r.detail},
                      {"evidence", r.evidence}});
      if (r.outcome != diagnostics::ProbeOutcome::kFail) continue;
      std::string why = fmt::format("{} {}: {}", core::layerName(r.layer), r.name, r.detail);
      for (size_t i = 0; i < r.evidence.size() && i < 3; ++i) why += "; " + r.evidence[i];
      if (r.evidence.size() > 3) why += fmt::format("; and {} more", r.evidence.size() - 3);
      reasons.push_back(why);
    }
    std::fflush(stdout);
    CCSCOPE_RETURN_IF_ERROR(c.put(key, json(reasons).dump()));
    return Status::ok();
  }
  CCSCOPE_ASSIGN_OR_RETURN(std::string v, c.get(key, Deadline::afterSeconds(6 * po.timeout_s)));
  const json j = json::parse(v, nullptr, false);
  if (j.is_array()) reasons = j.get<std::vector<std::string>>();
  return Status::ok();
}

Status BurninRank::connect() {
  measured_ = jobTransportOptions(info_, *rv_.client, p_.ifname, 1, most_on_one_machine_, 0);
  CCSCOPE_ASSIGN_OR_RETURN(t_, transports::makeTransport(p_.transport, measured_));
  CCSCOPE_RETURN_IF_ERROR(t_->connect(*rv_.client, Deadline::afterSeconds(p_.timeout_s))
                              .prepend(fmt::format("{} transport set-up", p_.transport)));
  const uint64_t bytes =
      std::max({p_.pairs.bytes, p_.soak.bytes, p_.congestion.bytes, p_.congestion.aggressor_bytes});
  mem_.assign(2 * bytes + 64, 0);
  CCSCOPE_ASSIGN_OR_RETURN(reg_, t_->registerMemory(mem_.data(), mem_.size()));
  const bool soak_collectives = p_.soak.enabled && !p_.soak.collectives.empty();
  if (p_.sweeps.empty() && !soak_collectives) return Status::ok();
  CCSCOPE_ASSIGN_OR_RETURN(harness_, connectHarness(measured_, hosts_, *rv_.client, p_.timeout_s));
  if (!soak_collectives) return Status::ok();
  bench::BenchConfig cfg;
  cfg.transport = p_.transport;
  cfg.timeout_s = p_.timeout_s;
  CCSCOPE_ASSIGN_OR_RETURN(
      sampler_, makeBackend(p_.soak.collective_algo, t_.get(), harness_.get(), cfg, nullptr));
  return sampler_->allocate(p_.soak.collective_bytes, core::HostPages::kBase);
}

Status BurninRank::pairs() {
  PairsOptions po;
  po.transport = p_.transport;
  po.scope = p_.pairs.scope;
  po.rounds_k = p_.pairs.rounds;
  po.seed = p_.pairs.seed;
  po.retest = p_.pairs.retest;
  po.latency_unjudged = latency_unjudged_;
  po.pair = {p_.pairs.bytes, p_.pairs.lat_iters, p_.pairs.test_s, p_.timeout_s};
  po.bandwidth.degraded = p_.pairs.degraded;
  po.bandwidth.failed = p_.pairs.failed;
  if (root()) std::printf("#\n# pairs\n");
  PairsPhase phase(po, *rv_.client, *t_, reg_.region(), json_.get(), "burnin/pairs");
  CCSCOPE_RETURN_IF_ERROR(phase.run(hosts_));
  if (!root()) return Status::ok();
  pairs_summary_ = phase.finish();
  for (const json& h : pairs_summary_["host_verdicts"])
    findings_.push_back(
        {"host", h.value("unit_a", ""), "", h.value("verdict", ""), "pairs", shareText(h), -1});
  for (const json& l : pairs_summary_["links"])
    findings_.push_back({"link", l.value("unit_a", ""), l.value("unit_b", ""),
                         l.value("verdict", ""), "pairs", shareText(l), -1});
  return Status::ok();
}

// One [[sweep]] of the profile: bench's sweep over the job's transport, judged by bench's report
// rules (limits per size, tolerance against the fleet's baseline run); each failed row is a
// finding against the collective.
Status BurninRank::sweep(size_t index) {
  const burnin::SweepSpec& w = p_.sweeps[index];
  bench::BenchConfig cfg;
  CCSCOPE_ASSIGN_OR_RETURN(cfg.collective, collectives::parseCollective(w.collective));
  cfg.algorithms = {w.algo};
  cfg.transport = p_.transport;
  cfg.min_bytes = w.min_bytes;
  cfg.max_bytes = w.max_bytes;
  cfg.iters = w.iters;
  cfg.warmup = w.warmup;
  cfg.timeout_s = p_.timeout_s;
  cfg.host_pages = core::HostPages::kBase;
  CCSCOPE_ASSIGN_OR_RETURN(auto backend,
                           makeBackend(w.algo, t_.get(), harness_.get(), cfg, nullptr));
  reports::ResultSink none;
  reports::TableWriter table(stdout);
  reports::RecordCollector collected;
  Fanout fan;
  fan.sinks = {&table, &collected};
  if (json_) fan.sinks.push_back(json_.get());
  reports::ResultSink& sink = root() ? static_cast<reports::ResultSink&>(fan) : none;
  sink.onRun(
      makeRunMetadata(cfg, o_.argv, hosts_, launch::launchSourceName(info_.source), p_.transport));
  auto swept = bench::runSweep(cfg, {backend.get()}, sink);
  if (!swept)
    return swept.takeStatus().prepend(fmt::format("sweep {} ({} {})", index, w.collective, w.algo));
  if (!root()) return Status::ok();
  reports::ReportOptions r;
  r.baseline_path = w.baseline;
  CCSCOPE_RETURN_IF_ERROR(reports::parseCriteria(w.tolerance, w.min_busbw, w.max_lat, r.criteria));
  CCSCOPE_ASSIGN_OR_RETURN(reports::ReportVerdict v, reports::writeReports(collected.runs(), r));
  for (const std::string& f : v.failures) {
    findings_.push_back(
        {"collective", fmt::format("{} {}", w.collective, w.algo), "", "failed", "sweep", f, -1});
    std::printf("FAILED   %s\n", f.c_str());
  }
  if (v.failures.empty()) std::printf("# sweep %zu: %zu rows within their limits\n", index, v.rows);
  std::fflush(stdout);
  return Status::ok();
}

Status BurninRank::sweeps() {
  for (size_t i = 0; i < p_.sweeps.size(); ++i) CCSCOPE_RETURN_IF_ERROR(sweep(i));
  return Status::ok();
}

// Preflight failed: nothing is judged; every rank exits 2, rank 0 with the reasons.
int BurninRank::invalid(const std::vector<std::string>& reasons) {
  if (root()) {
    json hosts = json::object();
    for (const std::string& h : hosts_) hosts[h] = "invalid";
    std::printf(
        "#\n# burn-in verdict: INVALID (fix the environment first; nothing was measured)\n");
    for (const std::string& r : reasons) std::printf("INVALID  %s\n", r.c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "ccscope: burnin: invalid: %s\n", reasons.front().c_str());
    if (json_)
      json_->write({{"type", "burnin_summary"},
                    {"verdict", "invalid"},
                    {"reasons", reasons},
                    {"hosts", hosts},
                    {"links", json::array()},
                    {"findings", json::array()},
                    {"phases", json::array({"preflight"})}});
  }
  lingerWhileOthersNeedTheStore(rv_, info_.rank);
  return kExitUsage;
}

int BurninRank::summarize() {
  json hosts = json::object();
  for (const std::string& h : hosts_) hosts[h] = "pass";
  // The pairs phase's units: the hosts themselves (scope hosts), or ranks or rails on them.
  if (pairs_summary_.is_object())
    for (const auto& [unit, v] : pairs_summary_["hosts"].items()) hosts[unit] = v;
  json links = json::array(), findings = json::array();
  std::string overall = "pass";
  for (const BurninFinding& f : findings_) {
    findings.push_back(f.toJson());
    if (f.kind == "link") links.push_back(f.toJson());
    if (f.kind == "host" && hosts.contains(f.unit_a) && hosts[f.unit_a] != "failed")
      hosts[f.unit_a] = f.verdict;
    if (overall != "failed") overall = f.verdict;
  }
  std::printf("#\n# burn-in verdict: %s\n", overall == "pass"     ? "PASS"
                                            : overall == "failed" ? "FAILED"
                                                                  : "DEGRADED");
  for (const BurninFinding& f : findings_)
    std::printf("%-8s %s %s%s (%s): %s\n", f.verdict == "failed" ? "FAILED" : "DEGRADED",
                f.kind.c_str(), f.unit_a.c_str(),
                f.unit_b.empty() ? "" : (" <-> " + f.unit_b).c_str(), f.phase.c_str(),
                f.why.c_str());
  std::fflush(stdout);
  if (json_)
    json_->write({{"type", "burnin_summary"},
                  {"verdict", overall},
                  {"hosts", hosts},
                  {"links", links},
                  {"findings", findings},
                  {"phases", phases_}});
  return findings_.empty() ? kExitOk : kExitFailed;
}

int BurninRank::fail(const Status& s) {
  return reportFailure(s, jobFailureContext(info_.rank, info_.local_rank, info_.local_size,
                                            rv_.client.get(), hosts_, json_.get(), o_.json_path));
}

int BurninRank::run() {
  if (Status s = setUp(); !s.isOk()) return fail(s);
  if (p_.preflight) {
    std::vector<std::string> reasons;
    if (Status s = preflight(reasons); !s.isOk()) return fail(s);
    phases_.push_back("preflight");
    if (!reasons.empty()) return invalid(reasons);
  }
  if (Status s = connect(); !s.isOk()) return fail(s);
  const BurninContext x = context();
  auto phase = [&](bool on, const char* name, const std::function<Status()>& body) {
    if (!on) return Status::ok();
    phases_.push_back(name);
    return body();
  };
  Status s = phase(p_.pairs.enabled, "pairs", [&] { return pairs(); });
  if (s.isOk()) s = phase(!p_.sweeps.empty(), "sweep", [&] { return sweeps(); });
  if (s.isOk()) s = phase(p_.soak.enabled, "soak", [&] { return runSoak(x, findings_); });
  if (s.isOk())
    s = phase(p_.congestion.enabled, "congestion", [&] { return runCongestion(x, findings_); });
  if (!s.isOk()) return fail(s);
  const int code = root() ? summarize() : kExitOk;
  t_->close();
  lingerWhileOthersNeedTheStore(rv_, info_.rank);
  return code;
}

}  // namespace

int runBurninRank(const BurninOptions& o, const launch::LaunchInfo& info) {
  BurninRank rank(o, info);
  return rank.run();
}

}  // namespace ccscope::app
