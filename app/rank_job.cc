#include "app/rank_job.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "app/command.h"
#include "app/failure_report.h"
#include "app/job_launch.h"
#include "app/rendezvous.h"
#include "app/run_metadata.h"
#include "app/watchdog.h"
#include "bench/sweep.h"
#include "bench/wait_profile.h"
#include "collectives/schedule_backend.h"
#include "core/affinity.h"
#include "diagnostics/live/flight_dump.h"
#include "launch/store_client.h"
#include "launch/store_server.h"
#include "reports/jsonl_writer.h"
#include "reports/progress_display.h"
#include "reports/table_writer.h"
#include "transports/transport.h"
#ifdef CCSCOPE_HAVE_MPI
#include "collectives/baselines/mpi/mpi_backend.h"
#include "collectives/baselines/mpi/mpi_runtime.h"
#endif

namespace ccscope::app {

using core::Code;
using core::Deadline;
using core::Layer;
using core::Status;

namespace {

struct Fanout : reports::ResultSink {
  std::vector<reports::ResultSink*> sinks;
  void onRun(const reports::RunMetadata& m) override {
    for (auto* s : sinks) s->onRun(m);
  }
  void onSection(const std::string& t) override {
    for (auto* s : sinks) s->onSection(t);
  }
  void onMeasurement(const reports::Measurement& m) override {
    for (auto* s : sinks) s->onMeasurement(m);
  }
  void onProgress(int d, int t, double e) override {
    for (auto* s : sinks) s->onProgress(d, t, e);
  }
  void onEnd(const reports::RunSummary& r) override {
    for (auto* s : sinks) s->onEnd(r);
  }
};

core::Result<std::vector<std::string>> gatherHosts(launch::StoreClient& c, double timeout_s) {
  CCSCOPE_RETURN_IF_ERROR(c.put(fmt::format("host/{}", c.rank()), hostName()));
  std::vector<std::string> hosts;  // every rank learns them: a cut-off host names its own ranks
  for (int r = 0; r < c.size(); ++r) {
    CCSCOPE_ASSIGN_OR_RETURN(std::string h,
                             c.get(fmt::format("host/{}", r), Deadline::afterSeconds(timeout_s)));
    hosts.push_back(h);
  }
  return hosts;
}

// --html/--md/--csv/--junit and --baseline/thresholds on bench: the same writers as `report`.
int writeRequestedReports(const reports::RecordCollector& collected,
                          const reports::ReportOptions& r) {
  bool any = !r.html_path.empty() || !r.md_path.empty() || !r.csv_path.empty() ||
             !r.junit_path.empty() || !r.baseline_path.empty() || !r.criteria.limits.empty();
  if (!any) return kExitOk;
  auto v = reports::writeReports(collected.runs(), r);
  if (!v) {
    std::fprintf(stderr, "ccscope: error: %s\n", v.status().message().c_str());
    return kExitUsage;
  }
  for (const auto& f : v->failures) std::fprintf(stderr, "ccscope: %s\n", f.c_str());
  return v->exit_code;
}

core::Result<std::unique_ptr<collectives::CollectiveBackend>> makeBackend(
    const std::string& algo, transports::Transport* t, const bench::BenchConfig& cfg) {
  if (algo == "native" || cfg.transport == "mpi") {
#ifdef CCSCOPE_HAVE_MPI
    if (cfg.transport == "mpi" && algo == "native") return collectives::mpi::makeMpiBackend();
#endif
    return Status(Code::kInvalidArgument, fmt::format("--algo {} is not available with --transport "
                                                      "{} (native needs --transport mpi)",
                                                      algo, cfg.transport));
  }
  collectives::AlgorithmOptions ao{algo, cfg.segment_bytes, cfg.timeout_s, cfg.host_pages};
  CCSCOPE_ASSIGN_OR_RETURN(auto b, collectives::ScheduleBackend::create(*t, ao));
  return std::unique_ptr<collectives::CollectiveBackend>(std::move(b));
}

}  // namespace

int runBenchRank(const bench::BenchConfig& cfg, const JobOptions& o,
                 const launch::LaunchInfo& info) {
  if (o.bind_core) {  // first, so that every thread this rank starts inherits it
    auto cpus = core::allowedCpus();
    const int cpu = cpus ? core::cpuForLocalRank(*cpus, info.local_rank) : -1;
    Status s = cpus ? core::pinToCpu(cpu) : cpus.status();
    if (s.isOk())
      spdlog::info("--bind core: local rank {} pinned to CPU {} (of {} allowed)", info.local_rank,
                   cpu, cpus->size());
    else
      spdlog::warn("--bind core: not pinned: {}", s.toString());
  }
  core::FlightRecorder recorder;  // declared first: the heartbeat thread reads it until rv dies
  Rendezvous rv;
  FailureContext fctx{info.rank, hostName(), nullptr, &recorder, nullptr, o.json_path, {}, ""};
  if (auto hp = launch::parseHostPort(info.store); !info.store.empty() && hp)
    fctx.store_host = hp->host;
  fctx.local_rank = info.local_rank;
  fctx.local_size = info.local_size;
  auto fail = [&](Status s) {
    int code = reportFailure(s, fctx);
    if (rv.client) rv.client->reportAbort(s.toString());
    lingerWhileOthersNeedTheStore(rv, info.rank);
    return code;
  };
  if (Status s = joinRendezvous(info, o.store_bind, cfg.timeout_s, rv); !s.isOk()) return fail(s);
  launch::StoreClient& client = *rv.client;
  fctx.client = &client;
  client.setNoteProvider([&recorder] { return diagnostics::flightSnapshot(recorder); });
  std::unique_ptr<transports::Transport> transport;
  if (cfg.transport != "mpi") {
    auto t = transports::makeTransport(
        cfg.transport,
        jobTransportOptions(info, client, o.ifname, o.tcp_streams, o.shm_single_copy_from));
    if (!t) return fail(t.status());
    transport = std::move(t.value());
    Status s = transport->connect(client, Deadline::afterSeconds(cfg.timeout_s));
    if (!s.isOk()) return fail(s.prepend(fmt::format("{} transport set-up", cfg.transport)));
  }
  auto hosts = gatherHosts(client, cfg.timeout_s);
  if (!hosts) return fail(hosts.status());
  fctx.hosts = *hosts;
  // The wait sampler's period, from how crowded this host is (before any output).
  const int ranks_on_host =
      static_cast<int>(std::count(hosts->begin(), hosts->end(), (*hosts)[info.rank]));
  auto period =
      bench::samplePeriod(ranks_on_host, static_cast<int>(std::thread::hardware_concurrency()));
  if (!period) return fail(period.status());

  reports::ResultSink null_sink;
  Fanout fan;
  reports::TableWriter table(stdout);
  reports::ProgressDisplay progress(stderr);
  std::unique_ptr<reports::JsonLinesWriter> json;
  reports::RecordCollector collected;  // for --html/--md/--csv/--junit/--baseline
  if (info.rank == 0) {
    fan.sinks = {&table, &progress, &collected};
    if (!o.json_path.empty()) {
      auto j = reports::JsonLinesWriter::open(o.json_path);
      if (!j) return fail(j.status());
      json = std::move(j.value());
      fan.sinks.push_back(json.get());
      fctx.json = json.get();
    }
  }
  reports::ResultSink& sink = info.rank == 0 ? static_cast<reports::ResultSink&>(fan) : null_sink;
  sink.onRun(
      makeRunMetadata(cfg, o.argv, *hosts, launch::launchSourceName(info.source), cfg.transport));
  reports::RunSummary total;
  double busbw_sum = 0;
  // MPI calls take no deadline: a watchdog ends a call stuck past the timeout.
  Watchdog dog(
      cfg.timeout_s,
      [&](double stuck_s) {
        Status s(Code::kDeadlineExceeded,
                 fmt::format("a {} call has been stuck for {:.1f} s", cfg.transport, stuck_s));
        std::fflush(stdout);
        std::_Exit(fail(s));
      },
      [&] {  // SIGUSR1: dump the flight recorder without stopping
        std::string path = diagnostics::writeFlightDump(recorder, info.rank, fctx.host);
        std::fprintf(stderr, "ccscope: rank %d: flight recorder dumped to %s\n", info.rank,
                     path.c_str());
      });
  // One sweep per algorithm, or with --interleave one sweep in which they take turns.
  std::vector<std::vector<std::string>> sweeps;
  if (cfg.interleave)
    sweeps.push_back(cfg.algorithms);
  else
    for (const std::string& algo : cfg.algorithms) sweeps.push_back({algo});
  // CCSCOPE_FLIGHT_RECORDER=0 turns recording off (only to measure what it costs).
  const char* fr = std::getenv("CCSCOPE_FLIGHT_RECORDER");
  const bool recording = !fr || std::string(fr) != "0";
  for (const std::vector<std::string>& algos : sweeps) {
    std::vector<std::unique_ptr<collectives::CollectiveBackend>> backends;
    std::vector<collectives::CollectiveBackend*> turns;
    for (const std::string& algo : algos) {
      auto backend = makeBackend(algo, transport.get(), cfg);
      if (!backend) return fail(backend.status());
      if (!transport) backend = watched(std::move(backend.value()), dog);
      if (recording) (*backend)->setFlightRecorder(&recorder);
      if (algos.size() == 1 && cfg.algorithms.size() > 1) sink.onSection("algorithm: " + algo);
      if (std::string note = (*backend)->setupNote(); !note.empty()) sink.onSection(note);
      turns.push_back(backend->get());
      backends.push_back(std::move(backend.value()));
    }
    const std::string label = fmt::format("{}", fmt::join(algos, ","));
    // Only our executor says whom it waits on (MPI's calls are opaque). The sampler also ticks
    // the data path's bookkeeping clock, recorder on or off.
    std::optional<bench::WaitSampler> sampler;
    if (transport && info.size > 1)
      sampler.emplace(recording ? &recorder : nullptr, info.rank, info.size, *period);
    auto summary = bench::runSweep(cfg, turns, sink);
    if (!summary) return fail(summary.status());
    // Every rank with a sampler takes part (a rank whose recorder is off adds zeros), so ranks
    // that disagree on CCSCOPE_FLIGHT_RECORDER still run the same collectives.
    if (sampler) {
      std::vector<int64_t> flat = sampler->stop().flatten();
      if (Status s = turns.front()->sumInts(flat, Deadline::afterSeconds(cfg.timeout_s)); !s.isOk())
        return fail(s.prepend("gathering the wait profile"));
      bench::WaitProfile waits = bench::WaitProfile::unflatten(info.size, flat);
      bench::StragglerVerdict v = bench::findStraggler(waits);
      if (recording && json) json->write(bench::toJson(waits, v, label, *hosts));
      if (recording && v.rank >= 0)
        sink.onSection(fmt::format("{} ({})", v.text, (*hosts)[v.rank]));
    }
    total.rows += summary->rows;
    total.wrong_total += summary->wrong_total;
    busbw_sum += summary->avg_busbw_gbps * summary->rows;
  }
  total.avg_busbw_gbps = total.rows ? busbw_sum / total.rows : 0;
  sink.onEnd(total);
  client.setNoteProvider(nullptr);  // the recorder goes out of scope before the client
  client.finish();
  lingerWhileOthersNeedTheStore(rv, info.rank);
#ifdef CCSCOPE_HAVE_MPI
  collectives::mpi::finalize();
#endif
  if (total.wrong_total > 0) {
    if (info.rank == 0)
      std::fprintf(stderr, "ccscope: %lld wrong elements: results are not exact\n",
                   static_cast<long long>(total.wrong_total));
    return kExitWrongResults;
  }
  return info.rank == 0 ? writeRequestedReports(collected, o.report) : kExitOk;
}

}  // namespace ccscope::app
