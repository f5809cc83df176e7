#include "burnin/pair_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "core/robust.h"

namespace ccscope::burnin {

const char* verdictName(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kDegraded:
      return "degraded";
    case Verdict::kFailed:
      return "failed";
  }
  return "?";
}

namespace {

using core::median;
using core::medianInPlace;

// A floor keeps a perfectly even population from making every small step an outlier.
double robustSpread(const std::vector<double>& v) { return std::max(core::madSigma(v), 1e-3); }

struct Edge {
  int a, b;
  double x;  // log of the best figure
};

std::vector<Edge> bestEdges(const std::vector<PairValue>& values) {
  std::vector<Edge> all;
  all.reserve(values.size());
  for (const PairValue& v : values) {
    if (v.a == v.b || !(v.value > 0)) continue;
    all.push_back({std::min(v.a, v.b), std::max(v.a, v.b), v.value});
  }
  // Best figure first within a pair, then one edge per pair.
  std::sort(all.begin(), all.end(), [](const Edge& x, const Edge& y) {
    return std::tie(x.a, x.b, y.x) < std::tie(y.a, y.b, x.x);
  });
  std::vector<Edge> edges;
  for (const Edge& e : all)
    if (edges.empty() || edges.back().a != e.a || edges.back().b != e.b)
      edges.push_back({e.a, e.b, std::log(e.x)});
  return edges;
}

// Symmetric median polish: each unit's effect is the median of its links' figures net of the
// population and of the partner's effect (updated in place, which settles in a few sweeps); the
// effects are then re-centred to a median of 0.
int polish(int units, const std::vector<Edge>& edges, const std::vector<std::vector<int>>& adj,
           double& mu, std::vector<double>& h) {
  std::vector<double> scratch, present;
  int iter = 0;
  while (iter++ < 30) {
    double moved = 0;
    present.clear();
    for (int u = 0; u < units; ++u) {
      if (adj[u].empty()) continue;
      scratch.clear();
      for (int e : adj[u]) {
        const Edge& ed = edges[e];
        scratch.push_back(ed.x - mu - h[ed.a == u ? ed.b : ed.a]);
      }
      const double next = medianInPlace(scratch);
      moved = std::max(moved, std::fabs(next - h[u]));
      h[u] = next;
      present.push_back(next);
    }
    const double c = medianInPlace(present);
    for (int u = 0; u < units; ++u)
      if (!adj[u].empty()) h[u] -= c;
    mu += 2 * c;
    if (moved < 1e-6) break;  // a millionth of a factor e: far below any threshold
  }
  return iter;
}

void judge(Finding f, double log_share, double spread, const Thresholds& t,
           std::vector<Finding>& out) {
  f.share = std::exp(log_share);
  f.z = -log_share / spread;
  if (f.share >= t.degraded || f.z < t.min_z) return;
  f.verdict = f.share < t.failed ? Verdict::kFailed : Verdict::kDegraded;
  out.push_back(f);
}

}  // namespace

MatrixFit analyzeMatrix(int units, const std::vector<PairValue>& values, const Thresholds& t) {
  MatrixFit fit;
  fit.units = units;
  fit.host_share.assign(units, std::numeric_limits<double>::quiet_NaN());
  const std::vector<Edge> edges = bestEdges(values);
  std::vector<std::vector<int>> adj(units);
  for (int e = 0; e < static_cast<int>(edges.size()); ++e) {
    adj[edges[e].a].push_back(e);
    adj[edges[e].b].push_back(e);
  }
  std::vector<double> xs;
  xs.reserve(edges.size());
  for (const Edge& e : edges) xs.push_back(e.x);
  double mu = median(xs);
  fit.typical = std::exp(mu);
  const int measured =
      static_cast<int>(std::count_if(adj.begin(), adj.end(), [](auto& a) { return !a.empty(); }));
  if (measured < 4) {
    fit.note = fmt::format("{} units measured: at least 4 are needed to tell a host from a link",
                           measured);
    return fit;
  }
  std::vector<double> h(units, 0);
  polish(units, edges, adj, mu, h);
  fit.typical = std::exp(mu);
  std::vector<double> hs;
  for (int u = 0; u < units; ++u)
    if (!adj[u].empty()) {
      fit.host_share[u] = std::exp(h[u]);
      hs.push_back(h[u]);
    }
  fit.host_spread = robustSpread(hs);
  for (int u = 0; u < units; ++u)
    if (!adj[u].empty()) judge({true, u, -1}, h[u], fit.host_spread, t, fit.findings);
  // A link is judged net of its hosts' effects only where a host was found at fault: elsewhere
  // those effects are noise (a median of a host's links), and taking them out would make a
  // link between two lucky hosts look slow.
  std::vector<double> net(units, 0);
  for (const Finding& f : fit.findings) net[f.a] = h[f.a];
  std::vector<double> res(edges.size());
  for (size_t e = 0; e < edges.size(); ++e)
    res[e] = edges[e].x - mu - net[edges[e].a] - net[edges[e].b];
  fit.link_spread = robustSpread(res);
  for (size_t e = 0; e < edges.size(); ++e)
    judge({false, edges[e].a, edges[e].b}, res[e], fit.link_spread, t, fit.findings);
  std::sort(fit.findings.begin(), fit.findings.end(),
            [](const Finding& x, const Finding& y) { return x.share < y.share; });
  return fit;
}

}  // namespace ccscope::burnin
