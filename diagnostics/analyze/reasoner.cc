#include "diagnostics/analyze/reasoner.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace ccscope::diagnostics {
namespace {

constexpr size_t kMaxCulpritRanks = 64;
constexpr size_t kMaxCulpritHosts = 16;
constexpr size_t kMaxLinks = 8;
constexpr size_t kMaxExtraEvidence = 4;
constexpr int kHighConfidence = 70;
constexpr int kMediumConfidence = 40;

struct Candidate {
  const FindingAggregate* agg;
  reports::Finding finding;
};

int kindOrder(reports::FindingKind k) {
  switch (k) {
    case reports::FindingKind::kRoot:
      return 0;
    case reports::FindingKind::kSymptom:
      return 1;
    case reports::FindingKind::kContext:
      return 2;
  }
  return 3;
}

bool earlier(const FindingAggregate& a, const FindingAggregate& b) {
  return happenedBefore(a.has_time, a.first_time, a.first_order, b.has_time, b.first_time,
                        b.first_order);
}

void addPeerCulprits(const FindingAggregate& a, reports::Culprit& c) {
  std::vector<std::pair<size_t, std::string>> by_votes;
  for (const auto& [peer, reporters] : a.peers) by_votes.emplace_back(reporters.size(), peer);
  std::sort(by_votes.begin(), by_votes.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second < y.second;
  });
  for (const auto& [votes, peer] : by_votes) {
    for (const auto& reporter : a.peers.at(peer)) {
      if (c.links.size() >= kMaxLinks) break;
      c.links.push_back(fmt::format("{} -> {}", reporter, peer));
    }
  }
  // A peer blamed by several reporters is the common factor: it is the culprit.
  if (!by_votes.empty() && by_votes.front().first >= 2 &&
      (by_votes.size() == 1 || by_votes[0].first > by_votes[1].first)) {
    c.hosts.insert(c.hosts.begin(), by_votes.front().second);
  }
}

reports::Finding toFinding(const FindingAggregate& a, const FindingAccumulator& acc) {
  reports::Finding f;
  f.id = a.spec->id;
  f.layer = a.spec->layer;
  f.kind = a.spec->kind;
  f.score = a.spec->weight;
  f.count = a.count;
  f.verdict = a.verdict;
  f.next_step = a.spec->next_step;
  f.culprit = culpritOf(a, acc);
  f.evidence = a.evidence;
  return f;
}

bool rankBefore(const Candidate& x, const Candidate& y) {
  const int kx = kindOrder(x.finding.kind), ky = kindOrder(y.finding.kind);
  if (kx != ky) return kx < ky;
  if (x.finding.score != y.finding.score) return x.finding.score > y.finding.score;
  if (earlier(*x.agg, *y.agg)) return true;
  if (earlier(*y.agg, *x.agg)) return false;
  return x.finding.id < y.finding.id;
}

// Among findings of the top kind whose score is within the window, the earliest one wins.
size_t pickTop(const std::vector<Candidate>& ranked) {
  size_t best = 0;
  for (size_t i = 1; i < ranked.size(); ++i) {
    if (ranked[i].finding.kind != ranked[0].finding.kind ||
        ranked[i].finding.score < ranked[0].finding.score - kEarlierWindow) {
      break;
    }
    if (earlier(*ranked[i].agg, *ranked[best].agg)) best = i;
  }
  return best;
}

std::string confidenceOf(const reports::Finding& f) {
  if (f.kind != reports::FindingKind::kRoot) return "low";
  if (f.score >= kHighConfidence) return "high";
  return f.score >= kMediumConfidence ? "medium" : "low";
}

std::string describeCulprit(const reports::Culprit& c) {
  std::string out;
  if (c.hosts.size() == 1) out += " on host " + c.hosts.front();
  if (!c.links.empty() && c.links.size() <= 2) out += " (link " + c.links.front() + ")";
  return out;
}

// What was seen when nothing is conclusive.
std::string seenSummary(const std::vector<Candidate>& ranked, long files, long lines) {
  std::string out = fmt::format("nothing conclusive in {} file(s), {} line(s)", files, lines);
  if (ranked.empty()) return out + ": no known failure signature matched";
  out += "; seen:";
  for (size_t i = 0; i < ranked.size() && i < 5; ++i) {
    out += fmt::format(" [{}] {} (x{});", core::layerName(ranked[i].finding.layer),
                       ranked[i].finding.verdict, ranked[i].finding.count);
  }
  return out;
}

// A symptom that names no rank takes the rank of a symptom of its layer that names a failed
// process: a launcher's report spreads one failure over lines ("1 process returned non-zero",
// then "Process name: [[j,1],8]"), and only one of them says which rank. A rank that merely
// reported a timeout is no culprit.
void borrowSymptomRanks(const std::vector<Candidate>& ranked, reports::Diagnosis& d) {
  if (!d.culprit.ranks.empty()) return;
  for (size_t i = 1; i < ranked.size(); ++i) {
    const auto& f = ranked[i].finding;
    if (f.kind != reports::FindingKind::kSymptom || f.layer != d.layer) continue;
    if (!ranked[i].agg->spec->names_failed_process || f.culprit.ranks.empty()) continue;
    d.culprit.ranks = f.culprit.ranks;
    return;
  }
}

void addSupportingEvidence(const std::vector<Candidate>& ranked, size_t top,
                           reports::Diagnosis& d) {
  size_t added = 0;
  for (size_t i = 0; i < ranked.size() && added < kMaxExtraEvidence; ++i) {
    const auto& f = ranked[i].finding;
    if (i == top || f.layer != d.layer || f.evidence.empty()) continue;
    const auto& ev = f.evidence.front();
    const bool dup = std::any_of(d.evidence.begin(), d.evidence.end(), [&](const auto& x) {
      return x.file == ev.file && x.line == ev.line;
    });
    if (dup) continue;
    d.evidence.push_back(ev);
    ++added;
  }
}

// A root in another layer close behind the top one: the logs hold two readings, so the verdict
// is one level less sure (measured on the labelled sets: docs/diagnosis.md, "Confidence").
constexpr int kContestedMargin = 10;

bool contested(const std::vector<Candidate>& ranked) {
  const reports::Finding& top = ranked.front().finding;
  return std::any_of(ranked.begin() + 1, ranked.end(), [&](const Candidate& c) {
    return c.finding.kind == reports::FindingKind::kRoot && c.finding.layer != top.layer &&
           top.score - c.finding.score <= kContestedMargin;
  });
}

void conclude(const reports::Finding& f, reports::Diagnosis& d) {
  d.conclusive = true;
  d.layer = f.layer;
  d.culprit = f.culprit;
  d.evidence = f.evidence;
  d.next_step = f.next_step;
  d.confidence = confidenceOf(f);
  d.verdict = f.verdict + describeCulprit(f.culprit);
}

// With no error at all, context can still point somewhere (a bridge interface chosen for
// traffic, P2P paths through a PCIe switch): the layer whose context findings weigh most, and
// its heaviest finding. ranked.size() when no layer's context weighs kMinContextWeight: a few
// light hints (an interface variable echoed, a plugin not loaded) are what healthy runs print.
size_t contextHint(const std::vector<Candidate>& ranked) {
  std::map<core::Layer, int> weight;
  for (const auto& c : ranked) {
    if (c.finding.score > 0 && c.finding.layer != core::Layer::kNone)
      weight[c.finding.layer] += c.finding.score;
  }
  if (weight.empty()) return ranked.size();
  const auto heaviest =
      std::max_element(weight.begin(), weight.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  if (heaviest->second < kMinContextWeight) return ranked.size();
  const core::Layer best = heaviest->first;
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (ranked[i].finding.layer == best && ranked[i].finding.score > 0) return i;
  }
  return ranked.size();
}

// The best-ranked finding that points at another layer (a context finding only if it weighs).
void setRunnerUp(const std::vector<Candidate>& ranked, reports::Diagnosis& d) {
  for (size_t i = 1; i < ranked.size(); ++i) {
    const auto& f = ranked[i].finding;
    if (f.layer == d.layer || f.layer == core::Layer::kNone) continue;
    if (f.kind == reports::FindingKind::kContext && f.score <= 0) continue;
    d.runner_up = f.layer;
    d.runner_up_verdict = f.verdict;
    return;
  }
}

// Where to look next for a layer named only by a best guess.
const char* guessNextStep(core::Layer l) {
  switch (l) {
    case core::Layer::kBootstrap:
      return "Check that every rank starts and reaches the rendezvous: the launcher's host list "
             "and process count, MASTER_ADDR/MASTER_PORT (or the store) reachable from every node.";
    case core::Layer::kHostNetwork:
      return "Check the interface each rank uses (NCCL_SOCKET_IFNAME, ip -br addr), routes and "
             "firewalls between the hosts (nc -zv HOST PORT both ways).";
    case core::Layer::kRdma:
      return "Check the RDMA devices and ports on every host (ibv_devinfo, ibstat: state ACTIVE, "
             "the same link layer), and run `ccscope diagnose` or perftest between two hosts.";
    case core::Layer::kGpu:
      return "Check the GPUs and their driver on every host (nvidia-smi -q, dmesg | grep -i xid, "
             "nvidia-smi topo -m) and run `ccscope diagnose --device cuda`.";
    case core::Layer::kLibrary:
      return "Check that every rank loads the same communication library build (NCCL/MPI/UCX "
             "versions, plugins, LD_LIBRARY_PATH) and rerun with NCCL_DEBUG=INFO.";
    default:
      return "Check the program: every rank must call the same collectives in the same order "
             "with matching sizes; rerun with TORCH_NCCL_DUMP_ON_TIMEOUT=1 and NCCL_DEBUG=INFO.";
  }
}

std::string siteText(const CueTracker::Guess& g) {
  using Site = CueTracker::Site;
  switch (g.site) {
    case Site::kWords:
      return fmt::format("from the words of the failure lines ({})", g.words);
    case Site::kUserTraceback:
      return "from where it failed: a Python traceback through the program's own files";
    case Site::kNativeCrash:
      return "from where it failed: a native crash (signal) in the process, no layer named";
    case Site::kComponent:
      return fmt::format("from the components the failure lines' paths and identifiers name ({})",
                         g.words);
    case Site::kInfoLevel:
      return fmt::format("from failures logged at an informational level ({})", g.words);
    case Site::kAtStart:
      return "from the phase: the logs stop at the job's start with no words of the launch or "
             "rendezvous, as when hosts cannot reach each other";
    case Site::kPastStart:
      return "from the phase: the logs go past the job's start, so ranks fell out of step";
  }
  return "";
}

void bestGuess(const CueTracker::Guess& g, reports::Diagnosis& d) {
  d.conclusive = true;
  d.layer = g.layer;
  d.confidence = "low";
  d.evidence = {g.evidence};
  d.next_step = guessNextStep(g.layer);
  d.verdict = "no known failure signature matched; best guess " + siteText(g);
  if (g.runner_up != core::Layer::kNone) {
    d.runner_up = g.runner_up;
    d.runner_up_verdict = fmt::format("the failure lines' words also point here (score {} vs {})",
                                      g.runner_up_score, g.score);
  }
}

}  // namespace

// Where lines compare two ranks, the rank every pair names is the one that differs; one pair
// alone cannot say which of its two it is. When several differ, none is in every pair: the most
// named.
std::vector<int> commonPairRanks(const FindingAggregate& a) {
  long most = 0;
  for (const auto& [rank, n] : a.pair_mentions) most = std::max(most, n);
  std::vector<int> out;
  for (const auto& [rank, n] : a.pair_mentions)
    if (n == most && out.size() < kMaxCulpritRanks) out.push_back(rank);
  return out;
}

reports::Culprit culpritOf(const FindingAggregate& a, const FindingAccumulator& acc) {
  reports::Culprit c;
  const bool pairs = a.rank_pairs > 0;
  if (pairs) {
    c.ranks = commonPairRanks(a);
  } else {
    for (const auto& [rank, host] : a.ranks)
      if (c.ranks.size() < kMaxCulpritRanks) c.ranks.push_back(rank);
  }
  std::vector<std::string> rank_hosts;
  auto addHost = [&](const std::string& h) {
    if (!h.empty() && std::find(rank_hosts.begin(), rank_hosts.end(), h) == rank_hosts.end())
      rank_hosts.push_back(h);
  };
  auto hostOf = [&](int rank, const std::string& seen) {
    return seen.empty() ? acc.hostOf(rank) : seen;
  };
  if (pairs) {
    // The reporters' hosts say nothing about which rank differs.
    for (int rank : c.ranks) {
      auto it = a.ranks.find(rank);
      addHost(hostOf(rank, it != a.ranks.end() ? it->second : std::string()));
    }
  } else {
    for (const auto& [rank, host] : a.ranks) addHost(hostOf(rank, host));
    for (const auto& h : a.hosts) addHost(h);
  }
  if (rank_hosts.size() <= kMaxCulpritHosts) c.hosts = rank_hosts;
  addPeerCulprits(a, c);
  return c;
}

reports::Diagnosis reason(const FindingAccumulator& acc, long files, long lines,
                          const CueTracker::Guess& guess) {
  std::vector<Candidate> ranked;
  for (const auto& [id, a] : acc.aggregates()) ranked.push_back({&a, toFinding(a, acc)});
  std::sort(ranked.begin(), ranked.end(), rankBefore);
  reports::Diagnosis d;
  d.files = files;
  d.lines = lines;
  const bool has_root = !ranked.empty() && ranked[0].finding.kind == reports::FindingKind::kRoot &&
                        ranked[0].finding.score >= kMinRootScore;
  const bool has_symptom =
      !ranked.empty() && ranked[0].finding.kind != reports::FindingKind::kContext;
  if (has_root || has_symptom) {
    const size_t top = pickTop(ranked);
    if (top != 0)
      std::rotate(ranked.begin(), ranked.begin() + static_cast<long>(top),
                  ranked.begin() + static_cast<long>(top) + 1);
    conclude(ranked[0].finding, d);
    if (has_root && contested(ranked)) d.confidence = d.confidence == "high" ? "medium" : "low";
    if (!has_root) {
      borrowSymptomRanks(ranked, d);
      d.verdict +=
          "; no lower-layer error (network, RDMA, GPU, NCCL) appears in the logs, so the "
          "ranks most likely fell out of step: one rank did not reach the collective";
    }
    addSupportingEvidence(ranked, 0, d);
  } else if (const size_t hint = contextHint(ranked); hint < ranked.size()) {
    std::rotate(ranked.begin(), ranked.begin() + static_cast<long>(hint),
                ranked.begin() + static_cast<long>(hint) + 1);
    conclude(ranked[0].finding, d);
    d.confidence = "low";
    d.verdict = "no error signature matched; the context points at this layer: " + d.verdict;
  } else if (guess.layer != core::Layer::kNone) {
    bestGuess(guess, d);
  } else {
    d.verdict = seenSummary(ranked, files, lines);
    d.next_step =
        "Collect logs from all ranks with NCCL_DEBUG=INFO (and TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
        "for Flight Recorder dumps), plus dmesg from every host, and run again.";
    d.confidence = "none";
  }
  if (d.conclusive && d.runner_up == core::Layer::kNone) setRunnerUp(ranked, d);
  for (size_t i = 0; i < ranked.size() && i < kMaxListedFindings; ++i) {
    d.findings.push_back(std::move(ranked[i].finding));
  }
  return d;
}

}  // namespace ccscope::diagnostics
