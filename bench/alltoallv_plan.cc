#include "bench/alltoallv_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <sstream>

#include "collectives/schedule.h"

namespace ccscope::bench {

using core::Code;
using core::Status;

namespace {

constexpr const char* kSpecHelp = "uniform, skewed:ALPHA, moe:EXPERTS,TOPK, file:PATH";
constexpr int kMaxExperts = 1 << 16;
// Mixture of experts: tokens sampled per source rank (only proportions matter), the Zipf
// exponent of expert popularity, and the seed of the popularity order.
constexpr int kMoeTokens = 512;
constexpr double kMoeZipf = 1.1;
constexpr uint64_t kMoeSeed = 0x6d6f652d726f7574;  // "moe-rout"

Status badSpec(const std::string& s, const std::string& why) {
  return Status(Code::kInvalidArgument,
                fmt::format("--a2av '{}': {} (expected {})", s, why, kSpecHelp));
}

// A whole-string number: "1.5" yes, "1.5x", "" and "nan" no.
bool parseNumber(const std::string& text, double& out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  return errno == 0 && end == text.c_str() + text.size() && std::isfinite(out);
}

bool parseInt(const std::string& text, int& out) {
  double v = 0;
  if (!parseNumber(text, v) || v != std::floor(v) || v < 1 || v > kMaxExperts) return false;
  out = static_cast<int>(v);
  return true;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in (0, 1].
double unit(uint64_t h) { return (static_cast<double>(h >> 11) + 1.0) * 0x1.0p-53; }

core::Result<std::vector<std::vector<double>>> readWeights(const std::string& path, int ranks) {
  std::ifstream f(path);
  if (!f)
    return Status(Code::kInvalidArgument,
                  fmt::format("--a2av file:{}: cannot read it ({})", path, std::strerror(errno)));
  std::vector<std::vector<double>> rows;
  std::string line;
  for (int line_no = 1; std::getline(f, line); ++line_no) {
    std::istringstream words(line);
    std::vector<double> row;
    for (std::string w; words >> w;) {
      if (w[0] == '#') break;  // comment to the end of the line
      double v = 0;
      if (!parseNumber(w, v) || v < 0)
        return Status(Code::kInvalidArgument,
                      fmt::format("--a2av file:{} line {}: '{}' is not a non-negative number", path,
                                  line_no, w));
      row.push_back(v);
    }
    if (row.empty()) continue;
    if (static_cast<int>(row.size()) != ranks)
      return Status(
          Code::kInvalidArgument,
          fmt::format(
              "--a2av file:{} line {}: {} weights, want {} (one per destination rank of {} ranks)",
              path, line_no, row.size(), ranks, ranks));
    rows.push_back(std::move(row));
  }
  if (static_cast<int>(rows.size()) != ranks)
    return Status(Code::kInvalidArgument,
                  fmt::format("--a2av file:{}: {} rows, want a {}x{} matrix (row = source rank)",
                              path, rows.size(), ranks, ranks));
  return rows;
}

}  // namespace

core::Result<AlltoallvSpec> parseAlltoallvSpec(const std::string& s) {
  AlltoallvSpec spec;
  spec.text = s;
  const size_t colon = s.find(':');
  const std::string kind = s.substr(0, colon),
                    arg = colon == std::string::npos ? "" : s.substr(colon + 1);
  if (s == "uniform") return spec;
  if (kind == "skewed") {
    spec.kind = AlltoallvSpec::Kind::kSkewed;
    if (!parseNumber(arg, spec.alpha) || spec.alpha < 0)
      return badSpec(s, "ALPHA must be a number >= 0");
    return spec;
  }
  if (kind == "moe") {
    spec.kind = AlltoallvSpec::Kind::kMoe;
    const size_t comma = arg.find(',');
    if (comma == std::string::npos || !parseInt(arg.substr(0, comma), spec.experts) ||
        !parseInt(arg.substr(comma + 1), spec.topk))
      return badSpec(s, fmt::format("EXPERTS and TOPK must be integers in 1..{}", kMaxExperts));
    if (spec.topk > spec.experts)
      return badSpec(s, "TOPK cannot exceed EXPERTS (each token picks distinct experts)");
    return spec;
  }
  if (kind == "file" && colon != std::string::npos) {
    spec.kind = AlltoallvSpec::Kind::kFile;
    spec.path = arg;
    if (spec.path.empty()) return badSpec(s, "PATH is empty");
    return spec;
  }
  return badSpec(s, "unknown traffic pattern");
}

std::vector<double> skewedWeights(double alpha, int ranks, int src) {
  std::vector<double> w(ranks);
  for (int d = 0; d < ranks; ++d) w[d] = 1.0 / std::pow(1.0 + (d - src + ranks) % ranks, alpha);
  return w;
}

// The routing model. Expert e lives on rank e*n/EXPERTS (contiguous groups, as expert
// parallelism places them; fewer experts than ranks leaves some ranks without any). Expert
// popularity is Zipf-like, weight 1/(k+1)^1.1 for the k-th most popular, and the popularity
// order is a fixed pseudo-random permutation, so hot experts sit on arbitrary ranks. Each
// source rank routes kMoeTokens tokens; token t picks TOPK distinct experts by weighted sampling
// without replacement (Efraimidis-Spirakis keys u^(1/w), drawn from a hash of (src, t, e)).
// The weight of destination d is the number of picks that land on d's experts: ranks hosting
// popular experts receive far more than others, and every source's row differs a little.
std::vector<double> moeWeights(int experts, int topk, int ranks, int src) {
  std::vector<int> order(experts);
  std::iota(order.begin(), order.end(), 0);
  for (int i = experts - 1; i > 0; --i)  // Fisher-Yates, seeded: the same on every rank
    std::swap(order[i], order[splitmix64(kMoeSeed + static_cast<uint64_t>(i)) % (i + 1)]);
  std::vector<double> pop(experts);
  for (int k = 0; k < experts; ++k) pop[order[k]] = 1.0 / std::pow(k + 1.0, kMoeZipf);
  std::vector<double> w(ranks, 0.0);
  std::vector<std::pair<double, int>> keys(experts);
  for (int t = 0; t < kMoeTokens; ++t) {
    const uint64_t token =
        splitmix64((static_cast<uint64_t>(src) << 32) ^ static_cast<uint64_t>(t));
    for (int e = 0; e < experts; ++e)
      keys[e] = {std::log(unit(splitmix64(token + static_cast<uint64_t>(e)))) / pop[e], e};
    std::partial_sort(keys.begin(), keys.begin() + topk, keys.end(), std::greater<>());
    for (int k = 0; k < topk; ++k) w[static_cast<int64_t>(keys[k].second) * ranks / experts] += 1.0;
  }
  return w;
}

std::vector<uint64_t> apportion(const std::vector<double>& weights, uint64_t count) {
  const size_t n = weights.size();
  const long double total = std::accumulate(weights.begin(), weights.end(), 0.0L);
  std::vector<uint64_t> parts(n, 0);
  if (!(total > 0)) return parts;  // nothing to split by
  std::vector<long double> frac(n, 0);
  int64_t left = static_cast<int64_t>(count);
  for (size_t d = 0; d < n; ++d) {
    const long double q = static_cast<long double>(count) * weights[d] / total;
    parts[d] = std::min<uint64_t>(count, static_cast<uint64_t>(std::floor(q)));
    frac[d] = q - std::floor(q);
    left -= static_cast<int64_t>(parts[d]);
  }
  // Largest remainders first, ties to the lower destination; only weighted destinations.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return frac[a] > frac[b]; });
  for (size_t i = 0; left > 0; i = (i + 1) % n)
    if (weights[order[i]] > 0) ++parts[order[i]], --left;
  for (size_t i = n - 1; left < 0;
       i = (i + n - 1) % n)  // rounding overshoot: smallest remainders give back
    if (parts[order[i]] > 0) --parts[order[i]], ++left;
  return parts;
}

core::Result<collectives::AlltoallvPlan> makeAlltoallvPlan(const AlltoallvSpec& spec, int ranks,
                                                           uint64_t count) {
  collectives::AlltoallvPlan plan;
  plan.ranks = ranks;
  plan.matrix.assign(static_cast<size_t>(ranks) * ranks, 0);
  std::vector<std::vector<double>> file_rows;
  if (spec.kind == AlltoallvSpec::Kind::kFile) {
    CCSCOPE_ASSIGN_OR_RETURN(file_rows, readWeights(spec.path, ranks));
  }
  for (int s = 0; s < ranks; ++s) {
    std::vector<double> w;
    switch (spec.kind) {
      case AlltoallvSpec::Kind::kUniform:
        w.assign(ranks, 1.0);
        break;
      case AlltoallvSpec::Kind::kSkewed:
        w = skewedWeights(spec.alpha, ranks, s);
        break;
      case AlltoallvSpec::Kind::kMoe:
        w = moeWeights(spec.experts, spec.topk, ranks, s);
        break;
      case AlltoallvSpec::Kind::kFile:
        w = file_rows[s];
        break;
    }
    if (std::all_of(w.begin(), w.end(), [](double x) { return x == 0; })) {
      if (count == 0) continue;
      return Status(Code::kInvalidArgument,
                    fmt::format("--a2av {}: row {} is all zero, but rank {} must send {} elements",
                                spec.text, s, s, count));
    }
    std::vector<uint64_t> row = apportion(w, count);
    std::copy(row.begin(), row.end(), plan.matrix.begin() + static_cast<ptrdiff_t>(s) * ranks);
  }
  return plan;
}

}  // namespace ccscope::bench
