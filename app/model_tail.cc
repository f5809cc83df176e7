// `ccscope model tail`: a ring allreduce's p50 and p99 from its links' latency and bandwidth,
// the links measured by `ccscope pairs` (the ring of its units, in order) or given as figures,
// and what a share of bad links does to it.
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/model_command.h"
#include "core/units.h"
#include "model/tail.h"
#include "reports/jsonl_reader.h"

namespace ccscope::app {

using core::Code;
using core::Status;

namespace {

// The ring of the pairs run's units: unit i to unit i+1, each link its measured figures.
core::Result<std::vector<model::LinkTail>> ringFromPairs(const std::string& path, int& units) {
  CCSCOPE_ASSIGN_OR_RETURN(auto runs, reports::readResultsFile(path));
  for (const auto& run : runs) {
    if (!run.pairs || run.pairs->units.size() < 2) continue;
    const auto& m = *run.pairs;
    units = static_cast<int>(m.units.size());
    std::vector<model::LinkTail> links;
    for (int i = 0; i < units; ++i) {
      int a = i, b = (i + 1) % units;
      double p50 = m.p50_us.empty() ? NAN : m.p50_us[a][b], p99 = m.p99_us[a][b];
      if (!std::isfinite(p50) || !std::isfinite(p99) || !std::isfinite(m.bw_gbps[a][b]))
        return Status(Code::kInvalidArgument,
                      fmt::format("{}: the pair {} - {} of the ring was not measured", path,
                                  m.units[a], m.units[b]));
      links.push_back({p50 * 1e-6, std::max(p50, p99) * 1e-6, m.bw_gbps[a][b] * 1e9, 1});
    }
    return links;
  }
  return Status(Code::kInvalidArgument, fmt::format("{}: no ccscope pairs run in it", path));
}

core::Result<std::vector<model::LinkTail>> links(const ModelTailFlags& f, int& ranks) {
  std::vector<model::LinkTail> out;
  if (!f.pairs.empty()) {
    int units = 0;
    CCSCOPE_ASSIGN_OR_RETURN(out, ringFromPairs(f.pairs, units));
    if (ranks == 0) ranks = units;
    for (auto& l : out) l.links = double(ranks) / units;  // the measured links as a population
  } else {
    if (f.link_p50_us <= 0 || f.link_p99_us < f.link_p50_us)
      return Status(Code::kInvalidArgument,
                    "give --pairs FILE, or --link-p50 and --link-p99 (0 < p50 <= p99, in us)");
    if (ranks < 2) return Status(Code::kInvalidArgument, "--ranks: at least 2");
    out.push_back({f.link_p50_us * 1e-6, f.link_p99_us * 1e-6, f.link_gbps * 1e9, double(ranks)});
  }
  if (ranks < 2) return Status(Code::kInvalidArgument, "--ranks: at least 2");
  return out;
}

// The same links with a share of them bad: their p99 (and bandwidth) scaled.
std::vector<model::LinkTail> withBad(const std::vector<model::LinkTail>& links,
                                     const ModelTailFlags& f) {
  std::vector<model::LinkTail> out;
  for (auto l : links) {
    model::LinkTail bad = l;
    bad.links = l.links * f.bad_fraction;
    bad.p99_s = std::max(l.p50_s, l.p99_s * f.bad_p99_factor);
    bad.bytes_per_s = l.bytes_per_s * f.bad_bw_factor;
    l.links -= bad.links;
    out.push_back(l);
    if (bad.links > 0) out.push_back(bad);
  }
  return out;
}

nlohmann::json tailJson(const model::TailResult& r) {
  return {{"p50_us", r.p50_s * 1e6},
          {"p99_us", r.p99_s * 1e6},
          {"mean_us", r.mean_s * 1e6},
          {"method", r.method}};
}

}  // namespace

int runModelTail(const ModelTailFlags& f) {
  auto fail = [](const Status& s) {
    fmt::print(stderr, "ccscope model tail: error: {}\n", s.message());
    return kExitUsage;
  };
  int ranks = f.ranks;
  auto ls = links(f, ranks);
  if (!ls) return fail(ls.status());
  auto bytes = core::parseSize(f.size);
  if (!bytes) return fail(bytes.status());
  if (f.bad_fraction < 0 || f.bad_fraction >= 1 || f.bad_p99_factor <= 0 || f.bad_bw_factor <= 0)
    return fail(Status(Code::kInvalidArgument, "--bad-fraction in [0, 1), factors above 0"));
  auto healthy = model::predictTail(model::ringAllreduceTail(*ls, ranks, double(*bytes)));
  if (!healthy) return fail(healthy.status());
  fmt::print("ring allreduce, {} ranks, {} per rank, {} steps ({}):\n", ranks,
             core::formatBytes(*bytes), 2 * (ranks - 1), healthy->method);
  fmt::print("  as measured: p50 {:.4g} us, p99 {:.4g} us\n", healthy->p50_s * 1e6,
             healthy->p99_s * 1e6);
  nlohmann::json rec = {{"type", "tail_prediction"},
                        {"ranks", ranks},
                        {"bytes", *bytes},
                        {"steps", 2 * (ranks - 1)},
                        {"links", tailJson(*healthy)}};
  if (f.bad_fraction > 0) {
    auto bad = model::predictTail(model::ringAllreduceTail(withBad(*ls, f), ranks, double(*bytes)));
    if (!bad) return fail(bad.status());
    fmt::print(
        "  {:g} of links at {:g}x p99 and {:g}x bandwidth: p50 {:.4g} us ({:+.1f}%), p99 {:.4g} "
        "us ({:+.1f}%)\n",
        f.bad_fraction, f.bad_p99_factor, f.bad_bw_factor, bad->p50_s * 1e6,
        (bad->p50_s / healthy->p50_s - 1) * 100, bad->p99_s * 1e6,
        (bad->p99_s / healthy->p99_s - 1) * 100);
    rec["with_bad_links"] = tailJson(*bad);
    rec["bad_fraction"] = f.bad_fraction;
    rec["bad_p99_factor"] = f.bad_p99_factor;
    rec["bad_bw_factor"] = f.bad_bw_factor;
  }
  if (!f.json.empty()) {
    std::ofstream out(f.json);
    if (!(out << rec.dump() << "\n"))
      return fail(Status(Code::kInvalidArgument, "cannot write " + f.json));
  }
  return kExitOk;
}

}  // namespace ccscope::app
