#include "app/bench_command.h"

#include <fmt/format.h>

#include <cstdlib>
#include <thread>

#include "app/cli_options.h"
#include "app/failure_report.h"
#include "app/job_launch.h"
#include "app/nccl_modes.h"
#include "app/rank_job.h"
#include "bench/alltoallv_plan.h"
#include "bench/bench_config.h"
#include "bench/sweep.h"
#include "bench/wait_profile.h"
#include "collectives/algorithms.h"
#include "core/host_memory.h"
#include "core/units.h"
#include "launch/environment.h"
#include "transports/transport.h"
#ifdef CCSCOPE_HAVE_CUDA_DEVICE
#include "collectives/device/cuda_device.h"
#endif

namespace ccscope::app {

using core::Status;

namespace {

struct RawOptions {
  std::string collective, min = "8", max = "64M", dtype = "float", op = "sum",
                          algo;  // algo "": ring where it exists
  std::string transport = "shm", timeout = "60s", segment, ifname;
  double factor = 2;
  std::string step;
  int iters = 20, warmup = 5, checks = 1, tcp_streams = 1, root = 0;
  bool interleave = false;
  LaunchFlags launch;
  ReportFlags report;
  std::string a2av = "uniform";
  std::string hugepages = "on";
  std::string placement = "both";
  std::string bind = "none";
  std::string ucx_errors = "peer";
  std::string device = "host";
  int gpus_per_node = 0;
  NcclModeOptions nccl;
  JobOptions job;
};

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t c = s.find(',', start);
    out.push_back(s.substr(start, c - start));
    if (c == std::string::npos) break;
    start = c + 1;
  }
  return out;
}

// Everything a rank would reject is rejected here, once, before any rank starts.
Status checkAlgorithms(bench::BenchConfig& c) {
  std::vector<std::string> known = c.transport == "mpi" ? std::vector<std::string>{"native"}
                                                        : collectives::algorithmNames(c.collective);
  // Over nccl, "all" is every schedule and NCCL's own collective.
  if (c.transport == "nccl") known.push_back("native");
  // "all" expands in place, so "all,auto" measures every algorithm and auto's pick side by side.
  std::vector<std::string> expanded;
  for (const std::string& a : c.algorithms)
    for (const std::string& x : a == "all" ? known : std::vector<std::string>{a})
      if (std::find(expanded.begin(), expanded.end(), x) == expanded.end()) expanded.push_back(x);
  c.algorithms = std::move(expanded);
  if (c.transport != "mpi") known.push_back("auto");
  for (const std::string& a : c.algorithms)
    if (std::find(known.begin(), known.end(), a) == known.end())
      return Status(core::Code::kInvalidArgument,
                    fmt::format("unknown algorithm '{}' for {} over {} (available: {}{})", a,
                                collectives::collectiveName(c.collective), c.transport,
                                fmt::join(known, ", "),
                                c.transport == "mpi" || c.transport == "nccl"
                                    ? ""
                                    : "; native needs --transport mpi or nccl"));
  if (c.transport != "mpi") return Status::ok();
  for (core::DataType t : c.dtypes)
    if (t == core::DataType::kHalf || t == core::DataType::kBfloat16)
      return Status(core::Code::kInvalidArgument,
                    fmt::format("MPI has no {} datatype: leave it out with --transport mpi",
                                core::dataTypeName(t)));
  for (core::ReduceOp op : c.ops)
    if (op == core::ReduceOp::kAvg)
      return Status(core::Code::kInvalidArgument,
                    "MPI has no avg reduction: leave it out with --transport mpi");
  return Status::ok();
}

// Sizes, steps, types, ops and the deadline, from their option texts.
Status parseSweepOptions(const RawOptions& r, bench::BenchConfig& c) {
  CCSCOPE_ASSIGN_OR_RETURN(c.collective, collectives::parseCollective(r.collective));
  CCSCOPE_ASSIGN_OR_RETURN(c.min_bytes, core::parseSize(r.min));
  CCSCOPE_ASSIGN_OR_RETURN(c.max_bytes, core::parseSize(r.max));
  if (!r.step.empty()) {
    CCSCOPE_ASSIGN_OR_RETURN(c.step, core::parseSize(r.step));
  }
  if (!r.segment.empty()) {
    CCSCOPE_ASSIGN_OR_RETURN(c.segment_bytes, core::parseSize(r.segment));
  }
  CCSCOPE_ASSIGN_OR_RETURN(c.dtypes, core::parseDataTypeList(r.dtype));
  CCSCOPE_ASSIGN_OR_RETURN(c.ops, core::parseReduceOpList(r.op));
  CCSCOPE_ASSIGN_OR_RETURN(c.timeout_s, parseDurationOption("--timeout", r.timeout));
  if (r.hugepages != "on" && r.hugepages != "off")
    return Status(core::Code::kInvalidArgument,
                  fmt::format("--hugepages takes on or off, not '{}'", r.hugepages));
  c.host_pages = r.hugepages == "on" ? core::HostPages::kHuge : core::HostPages::kBase;
  if (r.placement != "both" && r.placement != "out" && r.placement != "in")
    return Status(core::Code::kInvalidArgument,
                  fmt::format("--placement takes both, out or in, not '{}'", r.placement));
  c.out_of_place = r.placement != "in";
  c.in_place = r.placement != "out";
  c.factor = r.factor;
  c.iters = r.iters;
  c.warmup = r.warmup;
  c.checks = r.checks;
  return Status::ok();
}

// The transport and the algorithms over it; "all" types and ops mean all that MPI has.
Status parseTransportOptions(const RawOptions& r, bench::BenchConfig& c) {
  c.transport = r.transport;
  if (c.transport != "mpi" && !transports::isTransport(c.transport))
    return Status(core::Code::kInvalidArgument,
                  fmt::format("unknown transport '{}' (known: {}, mpi)", c.transport,
                              transports::transportNames()));
  if (r.algo.empty()) {
    auto names = collectives::algorithmNames(c.collective);
    bool ring = std::find(names.begin(), names.end(), "ring") != names.end();
    c.algorithms = {c.transport == "mpi"    ? "native"
                    : ring || names.empty() ? "ring"
                                            : names.front()};
  } else {
    c.algorithms = splitList(r.algo);
  }
  if (c.transport == "mpi") {
    if (r.dtype == "all")
      std::erase_if(c.dtypes, [](auto t) {
        return t == core::DataType::kHalf || t == core::DataType::kBfloat16;
      });
    if (r.op == "all") std::erase(c.ops, core::ReduceOp::kAvg);
  }
  return checkAlgorithms(c);
}

// --device and what it rules out: cuda-ipc and nccl move device buffers only (they imply --device
// cuda); MPI's baseline runs on host buffers.
Status parseDeviceOptions(const RawOptions& r, bench::BenchConfig& c) {
  if (r.device != "host" && r.device != "cuda")
    return Status(core::Code::kInvalidArgument,
                  fmt::format("--device takes host or cuda, not '{}'", r.device));
  c.device = transports::movesDeviceMemoryOnly(c.transport) ? "cuda" : r.device;
  c.gpus_per_node = r.gpus_per_node;
  if (c.device != "cuda") return Status::ok();
  if (c.transport == "mpi")
    return Status(core::Code::kInvalidArgument,
                  "--device cuda runs our algorithms (over cuda-ipc, nccl, shm or tcp); MPI's "
                  "baseline "
                  "uses host buffers");
  return Status::ok();
}

// Test-only faults: a rank that corrupts its results, or one that skips or changes a collective.
void applyTestOnlyFaults(bench::BenchConfig& c) {
  if (const char* v = std::getenv("CCSCOPE_TESTONLY_CORRUPT_RANK")) c.corrupt_rank = std::atoi(v);
  if (const char* v = std::getenv("CCSCOPE_TESTONLY_MISMATCH")) {
    std::string s(v);
    size_t colon = s.find(':');
    c.mismatch_rank = std::atoi(s.substr(0, colon).c_str());
    c.mismatch_kind = colon == std::string::npos ? "skip" : s.substr(colon + 1);
  }
}

core::Result<bench::BenchConfig> toConfig(const RawOptions& r) {
  bench::BenchConfig c;
  CCSCOPE_RETURN_IF_ERROR(parseSweepOptions(r, c));
  CCSCOPE_RETURN_IF_ERROR(parseTransportOptions(r, c));
  c.interleave = r.interleave;
  c.root = r.root;
  CCSCOPE_RETURN_IF_ERROR(parseNcclModes(r.nccl, c));
  CCSCOPE_RETURN_IF_ERROR(parseDeviceOptions(r, c));
  c.a2av = r.a2av;
  if (c.collective == collectives::Collective::kAlltoallv) {
    CCSCOPE_RETURN_IF_ERROR(bench::parseAlltoallvSpec(c.a2av).status());
  }
  applyTestOnlyFaults(c);
  CCSCOPE_RETURN_IF_ERROR(bench::validate(c));
  return c;
}

// Buffers that cannot fit in this host's memory are a configuration error said up front, not
// an OOM kill half-way through the sweep. Every rank on a host decides from the same figures; one
// of them says so.
Status checkBufferMemory(const bench::BenchConfig& cfg, const launch::LaunchInfo& info) {
  CCSCOPE_ASSIGN_OR_RETURN(size_t need, bench::bufferBytes(cfg, info.size));
  const size_t turns = cfg.interleave ? cfg.algorithms.size() : 1;  // backends alive at once
  std::string what =
      fmt::format("the send and receive buffers of -e {}", core::formatBytes(cfg.max_bytes));
  if (turns > 1) what += fmt::format(" for {} interleaved algorithms", turns);
  return core::checkAvailableMemory(2 * need * turns, info.local_size, what);
}

// What every rank of the job needs beyond the sweep: outputs, reports, transport settings.
core::Result<JobOptions> toJobOptions(const RawOptions& raw) {
  JobOptions job = raw.job;
  job.store_bind = raw.launch.store_bind;
  job.ifname = raw.ifname;
  job.tcp_streams = raw.tcp_streams;
  if (raw.bind != "none" && raw.bind != "core")
    return Status(core::Code::kInvalidArgument,
                  fmt::format("--bind takes none or core, not '{}'", raw.bind));
  job.bind_core = raw.bind == "core";
  if (raw.ucx_errors != "peer" && raw.ucx_errors != "none")
    return Status(core::Code::kInvalidArgument,
                  fmt::format("--ucx-errors takes peer or none, not '{}'", raw.ucx_errors));
  job.ucx_peer_errors = raw.ucx_errors == "peer";
  CCSCOPE_ASSIGN_OR_RETURN(job.shm_single_copy_from, shmSingleCopyFromEnv());
  // The wait sampler's period is worked out per rank; a bad override is refused here, once.
  CCSCOPE_RETURN_IF_ERROR(bench::samplePeriod(1, 1).status());
  ReportFlags report = raw.report;
  CCSCOPE_RETURN_IF_ERROR(parseReportFlags(report));
  job.report = report.options;
  return job;
}

Status checkDeviceUsable(const bench::BenchConfig& cfg) {
  if (cfg.device != "cuda") return Status::ok();
#ifdef CCSCOPE_HAVE_CUDA_DEVICE
  Status s = collectives::device::cudaUsable();
#else
  Status s = Status(core::Code::kUnavailable, "built without CUDA (no nvcc at build time)")
                 .withLayer(core::Layer::kGpu);
#endif
  if (!s.isOk())
    s.prepend(transports::movesDeviceMemoryOnly(cfg.transport) ? "--transport " + cfg.transport
                                                               : "--device cuda");
  return s;
}

int failBeforeLaunch(const Status& s) {
  std::fprintf(stderr, "ccscope: error: %s\n", s.message().c_str());
  return s.code() == core::Code::kUnavailable ? kExitMissing : kExitUsage;
}

int run(const RawOptions& raw) {
  auto cfg = toConfig(raw);
  if (!cfg) return usageError(cfg.status().message());
  auto job = toJobOptions(raw);
  if (!job) return usageError(job.status().message());
  // A GPU or an RDMA device that cannot be used is said once, with the library's reason,
  // before any rank starts.
  if (Status s = checkDeviceUsable(*cfg); !s.isOk()) return failBeforeLaunch(s);
  if (Status s = transports::transportUsable(cfg->transport); !s.isOk())
    return failBeforeLaunch(s.prepend("--transport " + cfg->transport));
  if (cfg->transport == "mpi" && !launchedExternally())
    return usageError(
        "--transport mpi runs under mpirun, e.g. mpirun --allow-run-as-root --oversubscribe -np 4 "
        "ccscope bench allreduce --transport mpi");
  LaunchOptions lo = toLaunchOptions(raw.launch, cfg->timeout_s);
  if (cfg->transport == "nccl") lo.on_failed_job = reportNcclLogsOfJob;
  return launchOrRun(lo, job->argv, [&](const launch::LaunchInfo& info) {
    if (cfg->root >= info.size) {
      if (info.rank == 0)
        std::fprintf(stderr, "ccscope: error: --root %d is not a rank (0..%d)\n", cfg->root,
                     info.size - 1);
      return static_cast<int>(kExitUsage);
    }
    if (Status s = checkBufferMemory(*cfg, info); !s.isOk()) {
      if (info.local_rank == 0)
        std::fprintf(stderr, "ccscope: error: rank %d: %s\n", info.rank, s.message().c_str());
      return static_cast<int>(kExitUsage);
    }
    return runBenchRank(*cfg, *job, info);
  });
}

}  // namespace

Command addBenchCommand(CLI::App& root, const std::vector<std::string>& argv) {
  auto raw = std::make_shared<RawOptions>();
  raw->job.argv = argv;
  CLI::App* b = root.add_subcommand("bench", "Measure a collective over a sweep of message sizes");
  b->add_option("collective", raw->collective, collectives::collectiveNames())->required();
  b->add_option("-b,--minbytes", raw->min, "Smallest message (8, 4K, 64M; binary multiples)");
  b->add_option("-e,--maxbytes", raw->max, "Largest message");
  b->add_option("-f,--stepfactor", raw->factor, "Multiply the size by this between steps");
  b->add_option("-i,--stepbytes", raw->step, "Add this many bytes between steps (instead of -f)");
  b->add_option("-n,--iters", raw->iters, "Timed iterations per size");
  b->add_option("-w,--warmup_iters", raw->warmup, "Warm-up iterations per size");
  b->add_option("-c,--check", raw->checks, "Checked runs per size and placement (0: none)");
  b->add_option("-d,--dtype", raw->dtype,
                "int8,uint8,int32,uint32,int64,uint64,half,bfloat16,float,double or all");
  b->add_option("-o,--op", raw->op, "sum,prod,min,max,avg or all");
  b->add_option("--algo", raw->algo,
                "Algorithms, comma-separated, all, or auto (default: ring where it exists; native "
                "with --transport mpi); native over nccl is NCCL's own collective");
  b->add_flag("--interleave", raw->interleave,
              "With several algorithms: take turns at each size (forward, then back, half the "
              "iterations each time) instead of one whole sweep each");
  b->add_option("--root", raw->root, "Root rank of broadcast")->check(CLI::NonNegativeNumber);
  b->add_option("--a2av", raw->a2av,
                "alltoallv traffic: uniform, skewed:ALPHA, moe:EXPERTS,TOPK, file:PATH");
  b->add_option("--transport", raw->transport,
                transports::transportNames() + " or mpi (cuda-ipc and nccl imply --device cuda)");
  b->add_option("--device", raw->device,
                "host (default) or cuda: buffers, fills, checks and reductions on the GPU of the "
                "local rank; shm and tcp then stage through pinned host buffers");
  b->add_option("--gpus-per-node", raw->gpus_per_node,
                "--device cuda: local rank r takes GPU r modulo this (default: the GPUs visible)")
      ->check(CLI::NonNegativeNumber);
  b->add_option("--timeout", raw->timeout,
                "Deadline of every collective operation (30s, 500ms; inf: none)");
  b->add_option("--json", raw->job.json_path, "Write JSON Lines results to this file");
  addReportOptions(*b, raw->report);
  b->add_option("--placement", raw->placement,
                "both (default), out or in: measure only the out-of-place or the in-place rows");
  b->add_option(
      "--bind", raw->bind,
      "none (default) or core: pin local rank r to the r-th CPU it may run on, round robin");
  b->add_option("--segment", raw->segment, "Pipeline segment size (default: from the size)");
  b->add_option("--hugepages", raw->hugepages,
                "on: host buffers from 2 MiB on transparent huge pages (default); off: base pages");
  addNcclModeOptions(*b, raw->nccl);
  addLaunchOptions(*b, raw->launch);
  b->add_option("--ifname", raw->ifname, "tcp: network interface to use");
  b->add_option("--tcp-streams", raw->tcp_streams, "tcp: connections per peer")
      ->check(CLI::Range(1, 64));
  b->add_option("--rdma-dev", raw->job.rdma_dev,
                "verbs: device and port, e.g. mlx5_0:1 (default: the first active port)");
  b->add_option("--gid-index", raw->job.gid_index,
                "verbs: GID index (default: the port's first RoCE v2 GID; InfiniBand: none)")
      ->check(CLI::NonNegativeNumber);
  b->add_option("--ucx-errors", raw->ucx_errors,
                "ucx: peer (default: a failed peer fails its requests at once) or none (also "
                "UCX 1.13's zero-copy cma and tcp, which lack peer error handling)");
  return {b, [raw] { return run(*raw); }};
}

}  // namespace ccscope::app
