#include "app/model_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include "app/model_fit_record.h"
#include "collectives/algorithms.h"
#include "core/dtype.h"
#include "core/units.h"
#include "model/fit.h"
#include "model/predict.h"
#include "reports/jsonl_reader.h"

namespace ccscope::app {

namespace {

struct FitFlags {
  std::vector<std::string> inputs;
  std::string out, min_bytes = "0";
  uint64_t min_size = 0;
  int cores = 0;
  bool one_machine = false;
};

struct TransportRows {
  std::vector<model::FitRow> rows;
  std::vector<std::string> labels;
  uint64_t min_segment = 0;
  int runs = 0;
};

// Rows a schedule replays: a registry algorithm, checked right, with the segment it ran with.
bool usable(const reports::Measurement& m, const collectives::AlgorithmInfo*& algo) {
  auto c = collectives::parseCollective(m.collective);
  if (!c.isOk() || *c == collectives::Collective::kAlltoallv) return false;
  algo = collectives::findAlgorithm(*c, m.algorithm);
  return algo && m.wrong == 0 && m.time_us > 0 && m.segment_bytes > 0 &&
         core::parseDataType(m.dtype).isOk();
}

void addRun(const reports::RunRecords& run, const FitFlags& f,
            std::map<std::string, TransportRows>& by) {
  if (!run.meta || run.rows.empty()) return;
  const auto& hosts = run.meta->hosts;
  std::map<std::string, int> index, per_host;
  int per_machine = 0;
  for (const auto& h : hosts) {
    index.emplace(h, static_cast<int>(index.size()));
    per_machine = std::max(per_machine, ++per_host[h]);
  }
  if (f.one_machine) per_machine = static_cast<int>(hosts.size());
  TransportRows& t = by[run.meta->transport];
  ++t.runs;
  for (const auto& m : run.rows) {
    const collectives::AlgorithmInfo* algo = nullptr;
    if (!usable(m, algo) || static_cast<int>(hosts.size()) != m.ranks || m.bytes < f.min_size)
      continue;
    model::FitRow r;
    r.sim.algo = algo;
    r.sim.ranks = m.ranks;
    r.sim.count = m.count;
    const size_t elem = core::dataTypeSize(*core::parseDataType(m.dtype));
    r.sim.elem = elem;
    r.sim.segment_elems = std::max<uint64_t>(1, m.segment_bytes / r.sim.elem);
    for (const auto& h : hosts) r.sim.host_of.push_back(index[h]);
    r.sim.cpu_driven = m.path != "device";  // host buffers, or staged through them
    r.sim.cores = f.cores;
    if (f.one_machine) r.sim.machine_of.assign(m.ranks, 0);
    r.measured_s = m.time_us * 1e-6;
    r.bytes = m.bytes;
    r.busbw_factor = m.busbw_factor;
    r.working_set = model::kBuffersPerRank * per_machine * static_cast<double>(m.bytes);
    t.rows.push_back(std::move(r));
    t.labels.push_back(fmt::format("{} {} np{} {}", m.collective, m.algorithm, m.ranks,
                                   core::formatBytes(m.bytes)));
    // Where ranks outnumbered cores the default segment was doubled (defaultSegmentBytes); a
    // segment the rule would not have made (--segment) is taken as it is.
    uint64_t floor = m.segment_bytes;
    const uint64_t chunk = m.count * elem / static_cast<uint64_t>(std::max(1, m.ranks));
    if (f.cores > 0 && per_machine > f.cores &&
        collectives::defaultSegmentBytes(chunk, floor / 2, true) == floor)
      floor /= 2;
    t.min_segment = t.min_segment ? std::min(t.min_segment, floor) : floor;
  }
}

FitRecord fitRecord(const std::string& transport, const model::Fit& fit, const TransportRows& t,
                    const FitFlags& f) {
  return {transport,         fit.params,    fit.fitted, fit.llc_bytes, fit.r2,
          fit.max_abs_error, t.rows.size(), f.cores,    f.one_machine, t.min_segment};
}

void printFit(const std::string& transport, const model::Fit& fit, const TransportRows& t) {
  const auto& p = fit.params;
  auto hop = [&](model::HopClass c) {
    return fit.fitted[model::byteIndex(c)]
               ? fmt::format("alpha {:.2f} us, {:.3g} GB/s", p.alpha[c] * 1e6, gbpsOf(p.beta[c]))
               : std::string("no rows");
  };
  fmt::print("{}: {} rows from {} runs, R2 {:.4f} (log time), max error {:.1f}%\n", transport,
             t.rows.size(), t.runs, fit.r2, fit.max_abs_error * 100);
  fmt::print("  within a host: {}; between hosts: {}; reduction {:.3g} GB/s\n", hop(model::kIntra),
             hop(model::kInter), gbpsOf(p.gamma));
  if (fit.llc_bytes > 0)
    fmt::print("  beyond a {} cache: {:.3g} GB/s more per byte\n",
               core::formatBytes(static_cast<uint64_t>(fit.llc_bytes)), gbpsOf(p.delta));
  fmt::print("  {:<36} {:>12} {:>12} {:>7}\n", "row", "measured us", "model us", "error");
  for (size_t i = 0; i < fit.rows.size(); ++i)
    fmt::print("  {:<36} {:>12.1f} {:>12.1f} {:>+6.1f}%\n", t.labels[i],
               fit.rows[i].measured_s * 1e6, fit.rows[i].predicted_s * 1e6,
               fit.rows[i].error() * 100);
}

int runFit(FitFlags& f) {
  auto min = core::parseSize(f.min_bytes);
  if (!min) {
    fmt::print(stderr, "ccscope model fit: error: --min-bytes: {}\n", min.status().message());
    return kExitUsage;
  }
  f.min_size = *min;
  auto runs = reports::readResultsFiles(f.inputs);
  if (!runs) {
    fmt::print(stderr, "ccscope model fit: error: {}\n", runs.status().message());
    return kExitUsage;
  }
  std::map<std::string, TransportRows> by;
  for (const auto& run : *runs) addRun(run, f, by);
  std::erase_if(by, [](const auto& kv) { return kv.second.rows.empty(); });
  if (by.empty()) {
    fmt::print(stderr,
               "ccscope model fit: error: no row to fit: it needs checked rows of hand-written "
               "algorithms with segment_bytes (ccscope bench --json)\n");
    return kExitUsage;
  }
  std::unique_ptr<std::ofstream> out;
  if (!f.out.empty()) {
    out = std::make_unique<std::ofstream>(f.out);
    if (!*out) {
      fmt::print(stderr, "ccscope model fit: error: cannot write {}\n", f.out);
      return kExitUsage;
    }
  }
  for (const auto& [transport, t] : by) {
    auto fit = model::fitRowsAndCache(t.rows);
    if (!fit) {
      fmt::print(stderr, "ccscope model fit: error: {}: {}\n", transport, fit.status().message());
      return kExitUsage;
    }
    printFit(transport, *fit, t);
    if (out) *out << fitRecordJson(fitRecord(transport, *fit, t, f)).dump() << "\n";
  }
  return kExitOk;
}

CLI::App* addFit(CLI::App& model, const std::shared_ptr<FitFlags>& f) {
  f->cores = static_cast<int>(std::thread::hardware_concurrency());
  CLI::App* sub = model.add_subcommand(
      "fit", "Fit alpha, beta (within and between hosts) and gamma to measured rows");
  sub->add_option("results", f->inputs, "JSON Lines of ccscope bench (several: merged)")
      ->required();
  sub->add_option("--out", f->out, "Write the fit as JSON Lines (one model_fit per transport)");
  sub->add_option("--min-bytes", f->min_bytes, "Fit only rows of at least this size");
  sub->add_option("--cores", f->cores,
                  "CPUs the ranks of a host share (default: this machine's; 0: do not model)");
  sub->add_flag("--one-machine", f->one_machine,
                "Every host of the runs was a namespace of this one machine: all ranks share "
                "its CPUs");
  return sub;
}

CLI::App* addPredict(CLI::App& model, const std::shared_ptr<ModelPredictFlags>& p) {
  CLI::App* pr = model.add_subcommand("predict", "Predicted time, algbw and busbw per algorithm");
  pr->add_option("--fit", p->fit, "A fit written by `ccscope model fit --out`");
  pr->add_option("--transport", p->transport, "Which transport of the fit (default: the first)");
  pr->add_option("--preset", p->preset,
                 "A published topology: h100-nvswitch-ndr, "
                 "h200-nvswitch-ndr");
  pr->add_option("--ranks", p->ranks, "Rank counts: 8,64,1024 or 8:100000 (powers of two)");
  pr->add_option("--ranks-per-host", p->ranks_per_host,
                 "Ranks per host (default: the preset's, "
                 "or every rank on one host for a fit)");
  pr->add_option("-b,--minbytes", p->minbytes, "Smallest size per rank");
  pr->add_option("-e,--maxbytes", p->maxbytes, "Largest size per rank");
  pr->add_option("-f,--stepfactor", p->stepfactor, "Multiply the size by this between steps");
  pr->add_option("--collective", p->collective, "allreduce, alltoall or all");
  pr->add_option("--algo", p->algo, "Algorithms, comma-separated, or all");
  pr->add_option("--json", p->json, "Write model_run and prediction records (JSON Lines)");
  pr->add_option("--cores", p->cores, "CPUs a host's ranks share (default: the fit's)");
  pr->add_flag("--one-machine", p->one_machine, "All hosts share one machine's CPUs");
  pr->add_option("--nics", p->nics, "NICs (rails) per host");
  pr->add_option("--nic-bw", p->nic_gbps, "GB/s of one NIC");
  pr->add_option("--intra-bw", p->intra_gbps, "GB/s between two ranks of a host");
  pr->add_option("--hosts-per-leaf", p->hosts_per_leaf,
                 "Hosts under one leaf switch (0: one "
                 "switch)");
  pr->add_option("--oversubscription", p->oversubscription, "Leaf uplink oversubscription");
  return pr;
}

CLI::App* addTail(CLI::App& model, const std::shared_ptr<ModelTailFlags>& t) {
  CLI::App* tl = model.add_subcommand(
      "tail", "p50 and p99 of a ring allreduce at scale from per-link latency and bandwidth");
  tl->add_option("--pairs", t->pairs, "Links from a `ccscope pairs --json` run");
  tl->add_option("--link-p50", t->link_p50_us, "Every link's one-way p50 latency (us)");
  tl->add_option("--link-p99", t->link_p99_us, "Every link's one-way p99 latency (us)");
  tl->add_option("--link-bw", t->link_gbps, "Every link's bandwidth (GB/s; 0: not limiting)");
  tl->add_option("--ranks", t->ranks, "Ranks (default: the units of --pairs)");
  tl->add_option("--size", t->size, "Size per rank");
  tl->add_option("--bad-fraction", t->bad_fraction, "Share of links that are bad (0.001)");
  tl->add_option("--bad-p99-factor", t->bad_p99_factor, "A bad link's p99 over a good one's");
  tl->add_option("--bad-bw-factor", t->bad_bw_factor, "A bad link's bandwidth over a good one's");
  tl->add_option("--json", t->json, "Write a tail_prediction record (JSON Lines)");
  return tl;
}

}  // namespace

Command addModelCommand(CLI::App& root) {
  CLI::App* sub = root.add_subcommand(
      "model", "Fit a cost model to measured rows; predict collectives and tails at scale");
  sub->require_subcommand(1);
  auto ff = std::make_shared<FitFlags>();
  auto p = std::make_shared<ModelPredictFlags>();
  auto t = std::make_shared<ModelTailFlags>();
  CLI::App* fit = addFit(*sub, ff);
  CLI::App* pr = addPredict(*sub, p);
  addTail(*sub, t);
  return {sub, [=] {
            if (fit->parsed()) return runFit(*ff);
            return pr->parsed() ? runModelPredict(*p) : runModelTail(*t);
          }};
}

}  // namespace ccscope::app
