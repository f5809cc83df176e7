#include "app/rank_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "app/command.h"
#include "app/failure_report.h"
#include "app/job_launch.h"
#include "app/rendezvous.h"
#include "app/run_metadata.h"
#include "app/watchdog.h"
#include "bench/sweep.h"
#include "bench/wait_profile.h"
#include "collectives/harness_channel.h"
#include "collectives/schedule_backend.h"
#include "collectives/staged_backend.h"
#ifdef CCSCOPE_HAVE_ANALYZE
#include "diagnostics/analyze/nccl_debug_log.h"
#endif
#include "diagnostics/live/flight_dump.h"
#include "launch/host_identity.h"
#include "launch/store_client.h"
#include "launch/store_server.h"
#include "reports/jsonl_writer.h"
#include "reports/progress_display.h"
#include "reports/table_writer.h"
#include "transports/transport.h"
#ifdef CCSCOPE_HAVE_CUDA_DEVICE
#include "bench/device/cuda_buffer_data.h"
#include "collectives/device/cuda_device.h"
#endif
#ifdef CCSCOPE_HAVE_NCCL_BASELINE
#include "collectives/baselines/nccl/nccl_backend.h"
#endif
#ifdef CCSCOPE_HAVE_MPI
#include "collectives/baselines/mpi/mpi_backend.h"
#include "collectives/baselines/mpi/mpi_runtime.h"
#endif

namespace ccscope::app {

using core::Code;
using core::Deadline;
using core::Layer;
using core::Status;

core::Result<std::unique_ptr<collectives::CollectiveBackend>> makeBackend(
    const std::string& algo, transports::Transport* t, collectives::HarnessChannel* harness,
    const bench::BenchConfig& cfg, collectives::DeviceRuntime* device) {
  if (algo == "native" || cfg.transport == "mpi") {
#ifdef CCSCOPE_HAVE_MPI
    if (cfg.transport == "mpi" && algo == "native") return collectives::mpi::makeMpiBackend();
#endif
#ifdef CCSCOPE_HAVE_NCCL_BASELINE
    if (cfg.transport == "nccl" && algo == "native" && t && device)
      return collectives::nccl::makeNcclBackend(
          *t, *device, harness, static_cast<collectives::nccl::Registration>(cfg.nccl_register));
#endif
    return Status(Code::kInvalidArgument,
                  fmt::format("--algo {} is not available with --transport {} (native needs "
                              "--transport mpi, or nccl with --device cuda)",
                              algo, cfg.transport));
  }
  collectives::AlgorithmOptions ao{algo, cfg.segment_bytes, cfg.timeout_s, cfg.host_pages};
  // Device buffers: moved as they are by a transport that moves device memory, else staged.
  const bool direct = device && t->caps().memory_kinds.has(transports::MemoryKind::kCuda);
  if (direct) ao.device = device;
  CCSCOPE_ASSIGN_OR_RETURN(auto b, collectives::ScheduleBackend::create(*t, ao, harness));
  std::unique_ptr<collectives::CollectiveBackend> out(std::move(b));
  if (device && !direct) out = collectives::stagedBackend(std::move(out), *device);
  return out;
}

core::Result<std::unique_ptr<collectives::HarnessChannel>> connectHarness(
    const transports::TransportOptions& measured, const std::vector<std::string>& hosts,
    launch::StoreClient& client, double timeout_s) {
  HarnessTransport ht = harnessTransport(measured, hosts);
  // Its log lines name its scope (harness/), apart from the measured transport's.
  auto t = transports::makeTransport(ht.name, ht.options);
  Status s = t ? (*t)->connect(client, Deadline::afterSeconds(timeout_s)) : t.status();
  if (!s.isOk()) return s.prepend(fmt::format("harness channel ({}) set-up", ht.name));
  return collectives::HarnessChannel::create(std::move(*t));
}

namespace {

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

// --device cuda: the GPU of this rank, before any transport (cuda-ipc works on the current one).
core::Result<std::unique_ptr<collectives::DeviceRuntime>> openDevice(
    const bench::BenchConfig& cfg, const launch::LaunchInfo& info) {
  if (cfg.device != "cuda") return std::unique_ptr<collectives::DeviceRuntime>();
#ifdef CCSCOPE_HAVE_CUDA_DEVICE
  return collectives::device::openCudaDevice(info.local_rank, cfg.gpus_per_node);
#else
  (void)info;
  return Status(Code::kUnavailable, "--device cuda: built without CUDA (no nvcc at build time)")
      .withLayer(Layer::kGpu);
#endif
}

bench::DeviceDataFactory deviceDataFactory() {
#ifdef CCSCOPE_HAVE_CUDA_DEVICE
  return bench::device::cudaBufferData;
#else
  return nullptr;
#endif
}

// One rank of `ccscope bench`, from the rendezvous to the last report. Members are declared in
// the order they must be built; the recorder outlives the rendezvous, whose heartbeat reads it.
class BenchRank {
 public:
  BenchRank(const bench::BenchConfig& cfg, const JobOptions& o, const launch::LaunchInfo& info)
      : cfg_(cfg), o_(o), info_(info) {
    const char* fr = std::getenv("CCSCOPE_FLIGHT_RECORDER");  // "0": off, to measure its cost
    recording_ = !fr || std::string(fr) != "0";
    fctx_ =
        FailureContext{info.rank, hostName(), nullptr, &recorder_, nullptr, o.json_path, {}, ""};
    if (auto hp = launch::parseHostPort(info.store); !info.store.empty() && hp) {
      fctx_.store_host = hp->host;
      // Until the ranks' labels are gathered, this rank names itself by hostname and the
      // address it reaches the store from: it cannot know whether its hostname is unique.
      const std::string addr = launch::sourceAddressToward(hp->host, hp->port);
      if (!addr.empty()) fctx_.host = fmt::format("{} ({})", fctx_.host, addr);
    }
    fctx_.local_rank = info.local_rank;
    fctx_.local_size = info.local_size;
  }

  // ccscope's NCCL log goes once NCCL closed it (the transport), after a checked, exact run.
  ~BenchRank() {
    if (!remove_nccl_log_) return;
    harness_.reset();
    transport_.reset();
    std::remove(fctx_.nccl_log.c_str());
  }
  BenchRank(const BenchRank&) = delete;
  BenchRank& operator=(const BenchRank&) = delete;

  int run();

 private:
  int fail(const Status& s);
  Status setUp();
  Status connectHarness(const transports::TransportOptions& measured);
  Status openOutputs();
  reports::ResultSink& sink() {
    return info_.rank == 0 ? static_cast<reports::ResultSink&>(fan_) : null_sink_;
  }
  Status sweep(const std::vector<std::string>& algos, Watchdog& dog, reports::RunSummary& total);
  Status makeTurns(const std::vector<std::string>& algos, Watchdog& dog,
                   std::vector<std::unique_ptr<collectives::CollectiveBackend>>& backends);
  Status reportWaits(bench::WaitSampler& sampler, const std::string& label);
  int finish(const reports::RunSummary& total);

  const bench::BenchConfig& cfg_;
  const JobOptions& o_;
  const launch::LaunchInfo& info_;
  bool recording_ = true;
  bool nccl_log_ours_ = false;    // fctx_.nccl_log is ccscope's file
  bool remove_nccl_log_ = false;  // ... and the run was checked and exact
  core::FlightRecorder recorder_;
  Rendezvous rv_;
  FailureContext fctx_;
  std::unique_ptr<collectives::DeviceRuntime> device_;  // --device cuda
  std::unique_ptr<transports::Transport> transport_;
  // Barriers, statistics and the end-of-sweep sums, apart from the transport under test.
  std::unique_ptr<collectives::HarnessChannel> harness_;
  std::vector<std::string> hosts_;
  std::chrono::microseconds sample_period_{};
  double busbw_sum_ = 0;
  reports::ResultSink null_sink_;
  Fanout fan_;
  reports::TableWriter table_{stdout};
  reports::ProgressDisplay progress_{stderr};
  std::unique_ptr<reports::JsonLinesWriter> json_;
  reports::RecordCollector collected_;  // for --html/--md/--csv/--junit/--baseline
};

int BenchRank::fail(const Status& s) {
  int code = reportFailure(s, fctx_);
  if (rv_.client) rv_.client->reportAbort(s.toString());
  lingerWhileOthersNeedTheStore(rv_, info_.rank);
  return code;
}

// The rendezvous, the transport, every rank's host, and the wait sampler's period, which
// depends on how crowded this host is.
Status BenchRank::setUp() {
#ifdef CCSCOPE_HAVE_ANALYZE
  // First: before the store client's threads read the environment and before NCCL starts.
  if (cfg_.transport == "nccl") {
    const diagnostics::NcclDebugRoute route = diagnostics::routeNcclDebugOutput(info_.rank);
    fctx_.nccl_log = route.path;
    nccl_log_ours_ = route.ours;
  }
#endif
  CCSCOPE_RETURN_IF_ERROR(joinRendezvous(info_, o_.store_bind, cfg_.timeout_s, rv_));
  launch::StoreClient& client = *rv_.client;
  fctx_.client = &client;
  client.setNoteProvider([this] { return diagnostics::flightSnapshot(recorder_); });
  CCSCOPE_ASSIGN_OR_RETURN(GatheredHosts gathered, gatherHosts(client, cfg_.timeout_s));
  hosts_ = gathered.labels;
  fctx_.hosts = hosts_;
  fctx_.host = hosts_[info_.rank];
  transports::TransportOptions measured =
      jobTransportOptions(info_, client, o_.ifname, o_.tcp_streams, gathered.most_on_one_machine,
                          o_.shm_single_copy_from);
  measured.rdma_dev = o_.rdma_dev;
  measured.gid_index = o_.gid_index;
  measured.ucx_peer_errors = o_.ucx_peer_errors;
  CCSCOPE_ASSIGN_OR_RETURN(device_, openDevice(cfg_, info_));
  if (device_) measured.cuda_stream = device_->stream();
  measured.op_timeout_s = cfg_.timeout_s;
  if (cfg_.transport != "mpi") {
    CCSCOPE_ASSIGN_OR_RETURN(transport_, transports::makeTransport(cfg_.transport, measured));
    Status s = transport_->connect(client, Deadline::afterSeconds(cfg_.timeout_s));
    if (!s.isOk()) return s.prepend(fmt::format("{} transport set-up", cfg_.transport));
  }
  if (transport_) CCSCOPE_RETURN_IF_ERROR(connectHarness(measured));  // MPI keeps its own
  const int ranks_on_host =
      static_cast<int>(std::count(hosts_.begin(), hosts_.end(), hosts_[info_.rank]));
  CCSCOPE_ASSIGN_OR_RETURN(
      sample_period_,
      bench::samplePeriod(ranks_on_host, static_cast<int>(std::thread::hardware_concurrency())));
  return Status::ok();
}

// The harness's channel, chosen from where the ranks run (every rank gathered the same hosts).
Status BenchRank::connectHarness(const transports::TransportOptions& measured) {
  CCSCOPE_ASSIGN_OR_RETURN(harness_,
                           app::connectHarness(measured, hosts_, *rv_.client, cfg_.timeout_s));
  if (recording_) harness_->setFlightRecorder(&recorder_);
  return Status::ok();
}

// Rank 0 writes the table, the progress line, the collected records and the JSON Lines file.
Status BenchRank::openOutputs() {
  if (info_.rank != 0) return Status::ok();
  fan_.sinks = {&table_, &progress_, &collected_};
  if (!o_.json_path.empty()) {
    CCSCOPE_ASSIGN_OR_RETURN(json_, reports::JsonLinesWriter::open(o_.json_path));
    fan_.sinks.push_back(json_.get());
    fctx_.json = json_.get();
  }
  return Status::ok();
}

int BenchRank::run() {
  if (o_.bind_core) bindToCore(info_.local_rank);  // first: every thread inherits it
  if (Status s = setUp(); !s.isOk()) return fail(s);
  if (Status s = openOutputs(); !s.isOk()) return fail(s);
  sink().onRun(makeRunMetadata(cfg_, o_.argv, hosts_, launch::launchSourceName(info_.source),
                               cfg_.transport));
  if (nccl_log_ours_)
    sink().onSection(
        fmt::format("nccl: each rank's NCCL log (NCCL_DEBUG_FILE, NCCL_DEBUG=INFO set "
                    "by ccscope where unset), rank 0's {}, is read by the analyzer "
                    "if the rank fails and removed after a checked, exact run",
                    fctx_.nccl_log));
  // MPI calls take no deadline: a watchdog ends a call stuck past the timeout.
  Watchdog dog(
      cfg_.timeout_s,
      [this](double stuck_s) {
        Status s(Code::kDeadlineExceeded,
                 fmt::format("a {} call has been stuck for {:.1f} s", cfg_.transport, stuck_s));
        std::fflush(stdout);
        std::_Exit(fail(s));
      },
      [this] {  // SIGUSR1: dump the flight recorder without stopping
        std::string path = diagnostics::writeFlightDump(recorder_, info_.rank, fctx_.host);
        std::fprintf(stderr, "ccscope: rank %d: flight recorder dumped to %s\n", info_.rank,
                     path.c_str());
      });
  // One sweep per algorithm, or with --interleave one sweep in which they take turns.
  std::vector<std::vector<std::string>> sweeps;
  if (cfg_.interleave)
    sweeps.push_back(cfg_.algorithms);
  else
    for (const std::string& algo : cfg_.algorithms) sweeps.push_back({algo});
  reports::RunSummary total;
  for (const std::vector<std::string>& algos : sweeps)
    if (Status s = sweep(algos, dog, total); !s.isOk()) return fail(s);
  return finish(total);
}

Status BenchRank::makeTurns(
    const std::vector<std::string>& algos, Watchdog& dog,
    std::vector<std::unique_ptr<collectives::CollectiveBackend>>& backends) {
  std::set<std::string> said;  // a line about the transport once, not once per algorithm
  for (const std::string& algo : algos) {
    CCSCOPE_ASSIGN_OR_RETURN(
        auto backend, makeBackend(algo, transport_.get(), harness_.get(), cfg_, device_.get()));
    if (!transport_) backend = watched(std::move(backend), dog);
    if (recording_) backend->setFlightRecorder(&recorder_);
    if (algos.size() == 1 && cfg_.algorithms.size() > 1) sink().onSection("algorithm: " + algo);
    if (device_ && said.insert("buffers").second)
      sink().onSection(
          fmt::format("buffers: {} ({} rank {}); {}", device_->describe(), hostName(), info_.rank,
                      backend->dataPath() == "device" ? "moved device to device"
                                                      : "staged through pinned host buffers"));
    std::istringstream notes(backend->setupNote());
    for (std::string line; std::getline(notes, line);)
      if (!line.empty() && said.insert(line).second) sink().onSection(line);
    backends.push_back(std::move(backend));
  }
  return Status::ok();
}

// Every rank with a sampler takes part (a rank whose recorder is off adds zeros), so ranks
// that disagree on CCSCOPE_FLIGHT_RECORDER still run the same collectives.
Status BenchRank::reportWaits(bench::WaitSampler& sampler, const std::string& label) {
  std::vector<int64_t> flat = sampler.stop().flatten();
  if (Status s = harness_->sumInts(flat, Deadline::afterSeconds(cfg_.timeout_s)); !s.isOk())
    return s.prepend("gathering the wait profile");
  bench::WaitProfile waits = bench::WaitProfile::unflatten(info_.size, flat);
  bench::StragglerVerdict v = bench::findStraggler(waits);
  if (recording_ && json_) json_->write(bench::toJson(waits, v, label, hosts_));
  if (recording_ && v.rank >= 0) sink().onSection(fmt::format("{} ({})", v.text, hosts_[v.rank]));
  return Status::ok();
}

Status BenchRank::sweep(const std::vector<std::string>& algos, Watchdog& dog,
                        reports::RunSummary& total) {
  std::vector<std::unique_ptr<collectives::CollectiveBackend>> backends;
  CCSCOPE_RETURN_IF_ERROR(makeTurns(algos, dog, backends));
  std::vector<collectives::CollectiveBackend*> turns(backends.size());
  std::transform(backends.begin(), backends.end(), turns.begin(), [](auto& b) { return b.get(); });
  // Only our executor says whom it waits on (MPI's calls are opaque). The sampler also ticks
  // the data path's bookkeeping clock, recorder on or off.
  std::optional<bench::WaitSampler> sampler;
  if (transport_ && info_.size > 1)
    sampler.emplace(recording_ ? &recorder_ : nullptr, info_.rank, info_.size, sample_period_);
  CCSCOPE_ASSIGN_OR_RETURN(auto summary, bench::runSweep(cfg_, turns, sink(), deviceDataFactory()));
  if (sampler)
    CCSCOPE_RETURN_IF_ERROR(reportWaits(*sampler, fmt::format("{}", fmt::join(algos, ","))));
  total.rows += summary.rows;
  total.wrong_total += summary.wrong_total;
  busbw_sum_ += summary.avg_busbw_gbps * summary.rows;  // the run's average weighs sweeps by rows
  total.avg_busbw_gbps = total.rows ? busbw_sum_ / total.rows : 0;
  return Status::ok();
}

int BenchRank::finish(const reports::RunSummary& total) {
  sink().onEnd(total);
  rv_.client->setNoteProvider(nullptr);  // the recorder goes before the client
  rv_.client->finish();
  lingerWhileOthersNeedTheStore(rv_, info_.rank);
#ifdef CCSCOPE_HAVE_MPI
  collectives::mpi::finalize();
#endif
  remove_nccl_log_ = nccl_log_ours_ && cfg_.checks > 0 && total.wrong_total == 0;
  if (total.wrong_total > 0) {
    if (info_.rank == 0)
      std::fprintf(stderr, "ccscope: %lld wrong elements: results are not exact\n",
                   static_cast<long long>(total.wrong_total));
    return kExitWrongResults;
  }
  return info_.rank == 0 ? writeRequestedReports(collected_, o_.report) : kExitOk;
}

}  // namespace

int runBenchRank(const bench::BenchConfig& cfg, const JobOptions& o,
                 const launch::LaunchInfo& info) {
  BenchRank rank(cfg, o, info);
  return rank.run();
}

}  // namespace ccscope::app
