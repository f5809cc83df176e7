// `ccscope model predict`: the topology from a fit or a preset, a table per collective and
// rank count, and prediction records for `ccscope report`.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/model_command.h"
#include "app/model_fit_record.h"
#include "core/units.h"
#include "model/predict.h"
#include "reports/model_records.h"

namespace ccscope::app {

using core::Code;
using core::Status;

core::Result<std::vector<int>> parseRankList(const std::string& s) {
  std::vector<int> out;
  auto bad = [&] {
    return Status(Code::kInvalidArgument,
                  fmt::format("--ranks '{}': expected 8,64,1024 or 8:100000", s));
  };
  try {
    if (auto colon = s.find(':'); colon != std::string::npos) {
      int lo = std::stoi(s.substr(0, colon)), hi = std::stoi(s.substr(colon + 1));
      if (lo < 1 || hi < lo) return bad();
      for (long r = lo; r < hi; r *= 2) out.push_back(static_cast<int>(r));
      out.push_back(hi);
    } else {
      std::stringstream in(s);
      for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
    }
  } catch (const std::exception&) {
    return bad();
  }
  if (out.empty() || std::any_of(out.begin(), out.end(), [](int r) { return r < 1; })) return bad();
  return out;
}

namespace {

core::Result<model::Topology> fromFit(const ModelPredictFlags& f) {
  std::ifstream in(f.fit);
  if (!in) return Status(Code::kInvalidArgument, fmt::format("cannot read {}", f.fit));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("type", "") != "model_fit") continue;
    if (!f.transport.empty() && j.value("transport", "") != f.transport) continue;
    const FitRecord r = fitRecordFromJson(j);
    // Every rank on one host unless --ranks-per-host says otherwise.
    model::Topology t = model::fromParams(r.params, 1 << 20, r.cores, r.one_machine,
                                          r.min_segment_bytes, r.llc_bytes);
    t.name = "fit:" + j.value("transport", std::string("?"));
    t.source = fmt::format("fitted from {} rows (R2 {:.3f}) in {}", j.value("rows", 0),
                           j.value("r2", 0.0), f.fit);
    return t;
  }
  return Status(Code::kInvalidArgument,
                fmt::format("{}: no model_fit record{}", f.fit,
                            f.transport.empty() ? "" : " for transport " + f.transport));
}

core::Result<model::Topology> topology(const ModelPredictFlags& f) {
  if (f.fit.empty() == f.preset.empty())
    return Status(Code::kInvalidArgument, "give one of --fit FILE or --preset NAME");
  CCSCOPE_ASSIGN_OR_RETURN(model::Topology t, f.fit.empty() ? model::preset(f.preset) : fromFit(f));
  if (f.ranks_per_host > 0) t.ranks_per_host = f.ranks_per_host;
  if (f.cores >= 0) t.cores = f.cores;
  if (f.one_machine) t.one_machine = true;
  if (f.nics > 0) t.nics_per_host = f.nics;
  if (f.nic_gbps > 0) t.nic.bytes_per_s = f.nic_gbps * 1e9;
  if (f.intra_gbps > 0) t.intra.bytes_per_s = f.intra_gbps * 1e9;
  if (f.hosts_per_leaf >= 0) t.hosts_per_leaf = f.hosts_per_leaf;
  if (f.oversubscription > 0) t.oversubscription = f.oversubscription;
  return t;
}

core::Result<std::vector<uint64_t>> sizes(const ModelPredictFlags& f) {
  CCSCOPE_ASSIGN_OR_RETURN(uint64_t lo, core::parseSize(f.minbytes));
  CCSCOPE_ASSIGN_OR_RETURN(uint64_t hi, core::parseSize(f.maxbytes));
  if (lo < 1 || hi < lo || f.stepfactor <= 1)
    return Status(Code::kInvalidArgument, "sizes: need 1 <= -b <= -e and -f > 1");
  std::vector<uint64_t> out;
  for (double b = double(lo); b <= double(hi) * 1.0000001; b *= f.stepfactor)
    out.push_back(static_cast<uint64_t>(b));
  return out;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

struct Plan {
  model::Topology topo;
  std::vector<int> ranks;
  std::vector<uint64_t> sizes;
  std::vector<std::pair<std::string, std::vector<std::string>>> work;  // collective, algorithms
};

core::Result<Plan> plan(const ModelPredictFlags& f) {
  Plan p;
  CCSCOPE_ASSIGN_OR_RETURN(p.topo, topology(f));
  std::string ranks = f.ranks.empty() ? (f.fit.empty() ? "8:100000" : "8") : f.ranks;
  CCSCOPE_ASSIGN_OR_RETURN(p.ranks, parseRankList(ranks));
  CCSCOPE_ASSIGN_OR_RETURN(p.sizes, sizes(f));
  std::vector<std::string> colls = f.collective == "all"
                                       ? std::vector<std::string>{"allreduce", "alltoall"}
                                       : split(f.collective);
  for (const auto& c : colls) {
    auto known = model::modelAlgorithms(c, p.topo);
    p.work.emplace_back(c, f.algo == "all" ? known : split(f.algo));
  }
  return p;
}

void printRow(const std::vector<model::Prediction>& ps, size_t best) {
  std::string cells;
  for (size_t i = 0; i < ps.size(); ++i)
    cells += fmt::format(" {:>10.4g} {:>8.2f}{}", ps[i].seconds * 1e6, ps[i].busbw_gbps,
                         i == best ? "*" : " ");
  fmt::print("{:>8} {:>8} {:>10}{}\n", ps[0].ranks, ps[0].hosts, core::formatBytes(ps[0].bytes),
             cells);
}

void printHeader(const std::string& coll, const std::vector<std::string>& algos) {
  std::string cells;
  for (const auto& a : algos) cells += fmt::format(" {:>20}", a + " us, busbw");
  fmt::print("# {}\n{:>8} {:>8} {:>10}{}\n", coll, "ranks", "hosts", "size", cells);
}

}  // namespace

int runModelPredict(const ModelPredictFlags& f) {
  auto p = plan(f);
  if (!p) {
    fmt::print(stderr, "ccscope model predict: error: {}\n", p.status().message());
    return kExitUsage;
  }
  std::unique_ptr<std::ofstream> out;
  if (!f.json.empty()) {
    out = std::make_unique<std::ofstream>(f.json);
    if (!*out) {
      fmt::print(stderr, "ccscope model predict: error: cannot write {}\n", f.json);
      return kExitUsage;
    }
    *out << nlohmann::json{{"type", "model_run"},
                           {"topology", p->topo.name},
                           {"source", p->topo.source}}
                .dump()
         << "\n";
  }
  fmt::print("model: {} ({}); * marks the fastest\n", p->topo.name, p->topo.source);
  for (const auto& [coll, algos] : p->work) {
    printHeader(coll, algos);
    for (int n : p->ranks)
      for (uint64_t b : p->sizes) {
        std::vector<model::Prediction> row;
        for (const auto& a : algos) {
          auto pr = model::predict(p->topo, coll, a, n, b);
          if (!pr) {
            fmt::print(stderr, "ccscope model predict: error: {}\n", pr.status().message());
            return kExitUsage;
          }
          row.push_back(*pr);
        }
        auto best = static_cast<size_t>(
            std::min_element(row.begin(), row.end(),
                             [](const auto& x, const auto& y) { return x.seconds < y.seconds; }) -
            row.begin());
        printRow(row, best);
        for (size_t i = 0; out && i < row.size(); ++i) {
          const auto& r = row[i];
          reports::PredictionRecord rec{r.collective, r.algorithm, r.method,        r.ranks,
                                        r.hosts,      r.bytes,     r.seconds * 1e6, r.algbw_gbps,
                                        r.busbw_gbps, i == best};
          *out << reports::predictionToJson(rec).dump() << "\n";
        }
      }
  }
  return kExitOk;
}

}  // namespace ccscope::app
