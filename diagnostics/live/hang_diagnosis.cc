#include "diagnostics/live/hang_diagnosis.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <map>
#include <set>

#include "diagnostics/live/flight_dump.h"

namespace ccscope::diagnostics {

using core::Layer;
using launch::RankHealth;
using launch::RankState;
using reports::Diagnosis;

namespace {

std::string healthHost(const RankHealth& h) { return h.host.empty() ? h.addr : h.host; }
// "h3 (10.213.0.4)"; a label that already carries the address ("node (10.213.0.4)") stays as is.
std::string hostWithAddr(const RankHealth& h) {
  const std::string host = healthHost(h);
  return h.addr.empty() || host.find(h.addr) != std::string::npos
             ? host
             : fmt::format("{} ({})", host, h.addr);
}

Diagnosis make(Layer layer, std::string verdict, std::string next) {
  Diagnosis d;
  d.layer = layer;
  d.conclusive = true;
  d.confidence = "high";
  d.verdict = std::move(verdict);
  d.next_step = std::move(next);
  return d;
}

// " (signal 9, Killed)" where the launcher saw what ended the rank.
std::string endedBy(const RankHealth& h) {
  if (h.end_signal <= 0) return "";
  const char* what = strsignal(h.end_signal);  // glibc before 2.32 has no sigdescr_np
  return fmt::format(" (signal {}, {})", h.end_signal, what ? what : "unknown");
}

void blame(Diagnosis& d, const RankHealth& h) {
  d.culprit.ranks.push_back(h.rank);
  if (!healthHost(h).empty()) d.culprit.hosts.push_back(healthHost(h));
}

void addEvidence(Diagnosis& d, const HangInputs& in) {
  d.evidence.push_back({"", 0, fmt::format("rank {}: {}", in.self, in.failure.toString())});
  for (const RankHealth& h : in.table) {
    std::string line =
        fmt::format("rank {} ({}): {}", h.rank, healthHost(h), launch::rankStateName(h.state));
    if (h.state == RankState::kFrozen)
      line += fmt::format(", no heartbeat for {} ms", h.ms_since_heartbeat);
    if (h.state == RankState::kGone)
      line += fmt::format(" {} ms ago{}", h.ms_since_change, endedBy(h));
    if (!h.note.empty()) line += ": " + h.note;
    if (!h.progress.empty()) line += "; last progress " + h.progress;
    d.evidence.push_back({"", 0, reports::sanitizeText(line, 600)});
  }
}

// Signals that come from outside the job (the OOM killer, an operator, a scheduler), as opposed
// to a rank's own abort or crash, which may follow a peer's death.
bool killedFromOutside(const RankHealth& h) {
  return h.end_signal == SIGKILL || h.end_signal == SIGTERM || h.end_signal == SIGINT ||
         h.end_signal == SIGHUP;
}

// The first to go among the gone and frozen ranks. Ranks that went within kSameMomentMs of each
// other are one moment to the store (a killed rank's socket can close after a peer that read its
// memory has already aborted), so there one killed from outside comes first.
const RankHealth& firstToGo(std::vector<const RankHealth*>& bad) {
  constexpr int64_t kSameMomentMs = 250;
  auto when = [](const RankHealth* h) {
    return h->state == RankState::kFrozen ? h->ms_since_heartbeat : h->ms_since_change;
  };
  std::stable_sort(bad.begin(), bad.end(), [&](auto* a, auto* b) { return when(a) > when(b); });
  for (const RankHealth* h : bad) {
    if (when(bad.front()) - when(h) > kSameMomentMs) break;
    if (h->state == RankState::kGone && killedFromOutside(*h)) return *h;
  }
  return *bad.front();
}

// A rank that is gone or frozen, or whose host went silent.
std::optional<Diagnosis> deadOrFrozen(const HangInputs& in) {
  std::vector<const RankHealth*> bad;
  for (const RankHealth& h : in.table)
    if (h.rank != in.self && (h.state == RankState::kGone || h.state == RankState::kFrozen))
      bad.push_back(&h);
  if (bad.empty()) return std::nullopt;
  const RankHealth& first = firstToGo(bad);
  // Silence can be the process (stopped, killed) or the path to its host: ask the host.
  if (first.state == RankState::kFrozen && in.reachable && !first.addr.empty() &&
      !in.reachable(first.addr)) {
    Diagnosis d = make(Layer::kHostNetwork,
                       fmt::format("host {} stopped answering on the network: rank {} went silent "
                                   "and its host does not answer TCP",
                                   hostWithAddr(first), first.rank),
                       "Check that host's link (ip link, cable, switch port), routes and firewall; "
                       "ping it from the other hosts.");
    for (const RankHealth* h : bad)
      if (h->addr == first.addr) blame(d, *h);
    d.culprit.links.push_back(fmt::format("{} <-> rest of the job", healthHost(first)));
    return d;
  }
  bool gone = first.state == RankState::kGone;
  Diagnosis d =
      make(Layer::kApplication,
           gone ? fmt::format("rank {} on {} exited or was killed{} while the others waited for it",
                              first.rank, healthHost(first), endedBy(first))
                : fmt::format("rank {} on {} stopped responding: no heartbeat for {:.1f} s while "
                              "its host still answers (process stopped, e.g. SIGSTOP, or hung)",
                              first.rank, healthHost(first), first.ms_since_heartbeat / 1e3),
           gone ? "Look at that rank's own output and exit status (OOM killer: dmesg; a crash: "
                  "core dump); rerun with the same ranks to see whether it repeats."
                : "Inspect the process (state in /proc/PID/status, gdb -p PID, py-spy dump): is it "
                  "stopped, swapping, or stuck in a system call?");
  blame(d, first);
  return d;
}

// Ranks at the same operation number with different shapes (a skipped collective shifts the
// numbering, so it shows up the same way). Ranks merely one operation ahead are not a
// disagreement: their sends were buffered, which is normal.
std::optional<Diagnosis> disagreement(const HangInputs& in, const std::map<int, Snapshot>& snaps) {
  std::map<uint64_t, std::set<std::string>> shapes_at;
  for (const auto& [rank, s] : snaps)
    shapes_at[s.seq].insert(fmt::format("{} {} B {}", s.op, s.bytes, s.dtype));
  bool differ = false;
  for (const auto& [seq, shapes] : shapes_at) differ |= shapes.size() > 1;
  if (!differ) return std::nullopt;
  std::map<std::string, std::vector<int>> groups;
  for (const auto& [rank, s] : snaps)
    groups[fmt::format("#{} {} {} B {}", s.seq, s.op, s.bytes, s.dtype)].push_back(rank);
  auto majority = std::max_element(groups.begin(), groups.end(), [](auto& a, auto& b) {
    return a.second.size() < b.second.size();
  });
  Diagnosis d = make(Layer::kApplication, "",
                     "Make every rank call the same collectives in the same "
                     "order with the same count and dtype (look for rank-dependent branches).");
  std::string others;
  for (const auto& [key, ranks] : groups) {
    if (&key == &majority->first) continue;
    for (int r : ranks) {
      others += fmt::format("{}rank {} is at {}", others.empty() ? "" : "; ", r, key);
      for (const RankHealth& h : in.table)
        if (h.rank == r) blame(d, h);
    }
  }
  d.verdict = fmt::format("ranks disagree on the collective: {} rank(s) are at {}, but {}",
                          majority->second.size(), majority->first, others);
  return d;
}

const RankHealth* healthOf(const HangInputs& in, int rank) {
  for (const auto& h : in.table)
    if (h.rank == rank) return &h;
  return nullptr;
}

// x waits on y, and y is ahead of x (it finished the operation, so it sent its part), waits on
// x too, or could not finish its send to x: data from y to x is not arriving. Across hosts that
// is the network path. `sy` (y's snapshot) adds what y's unfinished send to x says.
Diagnosis starvedLink(const RankHealth& x, const RankHealth& y, const Snapshot* sy = nullptr) {
  const RankHealth *a = &x, *b = &y;
  if (a->rank > b->rank) std::swap(a, b);  // culprit ranks lower first
  bool same_host = healthHost(*a) == healthHost(*b);
  Diagnosis d =
      make(same_host ? Layer::kLibrary : Layer::kHostNetwork,
           fmt::format("rank {} ({}) waits for data from rank {} ({}), which is alive and has "
                       "sent it or waits in turn: the {} between them is not delivering",
                       x.rank, healthHost(x), y.rank, healthHost(y),
                       same_host ? "transport" : "network path"),
           same_host ? "Rerun with another transport (--transport tcp) to isolate the transport."
                     : "Test that pair of hosts directly (ccscope diagnose, ping, iperf); look for "
                       "firewall rules, MTU mismatches or a faulty link between them.");
  if (sy && sy->send_peer == x.rank)
    d.verdict += fmt::format(
        "; rank {}'s send to rank {} never finished ({} of {} B taken by the transport)", y.rank,
        x.rank, sy->send_moved, sy->send_expected);
  blame(d, *a);
  blame(d, *b);
  d.culprit.links.push_back(reports::linkName(healthHost(*a), healthHost(*b)));
  return d;
}

// How far a rank is through its operation (0..1), or -1 where unknown.
double through(const Snapshot* s) {
  return s && s->steps > 0 ? static_cast<double>(s->step) / s->steps : -1;
}

// Walks "x waits on y" from this rank. The first hop whose data is not arriving from a live
// sender is a dead path: the sender is ahead (a later operation, or it finished the one the
// receiver is still in, so its part went out), could not finish its send to the receiver, or
// waits on the receiver in turn. A rank that waits on nobody and has not reached the
// receiver's operation is the head (it is not in the collective at all). One that waits on
// nobody but has got as far as the receiver tells nothing: both are outside the recorded
// operations, and no verdict is drawn from the chain.
// A ring waits in a cycle, and the dead hop can be the one that closes it (back into this rank,
// which ran ahead), so that hop is judged before stopping. When no hop of the cycle has an
// unfinished send (the transport took the dead hop's sends whole) and every rank of it is in
// the same collective, the dead hop is the one whose sender got furthest beyond its receiver:
// downstream of it every rank stalled one step after the rank before it, while the sender kept
// going until it needed data from round the ring. A sender blocked in its send to the dead hop
// stops early instead, which is why the unfinished send is asked first.
std::optional<Diagnosis> waitFor(const HangInputs& in, const std::map<int, Snapshot>& snaps) {
  auto snap = [&](int r) -> const Snapshot* {
    auto it = snaps.find(r);
    return it == snaps.end() ? nullptr : &it->second;
  };
  auto inside = [](const Snapshot* s) {
    return s && (s->state == "running" || s->state == "failed");
  };
  auto waitsOn = [&](int r) -> int { return inside(snap(r)) ? snap(r)->peer : -1; };
  int x = in.self;
  int y = in.failure.peer() >= 0 ? in.failure.peer() : waitsOn(x);
  std::vector<int> path{x};  // path[i] waits on path[i + 1]
  while (y >= 0) {
    const Snapshot *sx = snap(x), *sy = snap(y);
    const RankHealth *hx = healthOf(in, x), *hy = healthOf(in, y);
    if (!hx || !hy) return std::nullopt;
    const bool ahead =
        sx && sy &&
        (sy->seq > sx->seq || (sy->seq == sx->seq && inside(sx) && sy->state == "done"));
    const bool stuck_send = sy && sy->send_peer == x;
    if (ahead || stuck_send || waitsOn(y) == x) return starvedLink(*hx, *hy, sy);
    if (auto at = std::find(path.begin(), path.end(), y); at != path.end()) {
      std::vector<int> cycle(at, path.end());  // each waits on the next, the last on the first
      int best = -1;
      double best_gap = 0;
      for (size_t i = 0; i < cycle.size(); ++i) {
        const Snapshot *a = snap(cycle[i]), *b = snap(cycle[(i + 1) % cycle.size()]);
        if (!a || !b || a->seq != b->seq || through(a) < 0 || through(b) < 0) continue;
        if (double gap = through(b) - through(a); gap > best_gap)
          best_gap = gap, best = static_cast<int>(i);
      }
      if (best < 0) return std::nullopt;
      const RankHealth *ha = healthOf(in, cycle[best]),
                       *hb = healthOf(in, cycle[(best + 1) % cycle.size()]);
      return ha && hb ? std::optional<Diagnosis>(starvedLink(*ha, *hb)) : std::nullopt;
    }
    if (waitsOn(y) < 0) {
      const bool behind = sx && (!sy || sy->seq < sx->seq);
      if (!behind) return std::nullopt;
      Diagnosis d =
          make(Layer::kApplication,
               fmt::format("rank {} waits for rank {}, which is alive but not inside this "
                           "collective (busy elsewhere or skipped it)",
                           x, y),
               "Find what that rank is doing (py-spy dump / gdb); check for rank-only code paths.");
      blame(d, *hy);
      return d;
    }
    path.push_back(y);
    x = y;
    y = waitsOn(y);
  }
  return std::nullopt;
}

// A rank that gave up first for a configuration reason (not a timeout) is the root cause.
std::optional<Diagnosis> configAbort(const HangInputs& in) {
  std::optional<Diagnosis> d;
  for (const RankHealth& h : in.table) {
    if (h.state != RankState::kAborted || h.rank == in.self) continue;
    bool config = h.note.rfind("invalid-argument", 0) == 0 || h.note.rfind("unsupported", 0) == 0 ||
                  h.note.rfind("unavailable", 0) == 0;
    if (!config) continue;
    Layer layer = Layer::kApplication;
    for (Layer l :
         {Layer::kBootstrap, Layer::kHostNetwork, Layer::kRdma, Layer::kGpu, Layer::kLibrary})
      if (h.note.find(fmt::format("[{}]", core::layerName(l))) != std::string::npos) layer = l;
    if (!d)
      d = make(layer, fmt::format("rank {} ({}) gave up: {}", h.rank, healthHost(h), h.note),
               "Fix that rank's configuration (its message names what is wrong) and rerun.");
    blame(*d, h);
  }
  return d;
}

}  // namespace

Diagnosis diagnoseHang(const HangInputs& in) {
  std::optional<Diagnosis> d;
  if (in.table.empty()) {
    if (in.reachable && !in.store_host.empty() && !in.reachable(in.store_host)) {
      d = make(
          Layer::kHostNetwork,
          fmt::format("this host ({}) lost the network: the rendezvous host {} does not answer "
                      "TCP from here ({})",
                      in.self_host, in.store_host, in.store_error),
          "Check this host's link (ip link, cable, switch port), routes and firewall.");
      d->culprit.ranks.push_back(in.self);
      for (size_t r = 0; r < in.hosts.size(); ++r)  // every rank on this host is cut off too
        if (in.hosts[r] == in.self_host) d->culprit.ranks.push_back(static_cast<int>(r));
      d->culprit.hosts.push_back(in.self_host);
      d->culprit.links.push_back(fmt::format("{} <-> rest of the job", in.self_host));
    } else {
      d = make(
          Layer::kApplication,
          fmt::format("the rendezvous store (rank 0 or the launcher) is gone: {}", in.store_error),
          "Look at rank 0's (or the launcher's) output: it exited or was killed first.");
      d->culprit.ranks.push_back(0);
    }
  }
  if (!d) d = deadOrFrozen(in);
  if (!d) {
    for (const RankHealth& h : in.table)
      if (h.state == RankState::kNotJoined) {
        if (!d)
          d = make(Layer::kBootstrap, "",
                   "Check that every rank was started and can reach the "
                   "rendezvous address (host, port, firewall).");
        blame(*d, h);
      }
    if (d)
      d->verdict =
          fmt::format("rank(s) {} never joined the rendezvous", fmt::join(d->culprit.ranks, ", "));
  }
  std::map<int, Snapshot> snaps;
  for (const RankHealth& h : in.table)
    if (Snapshot s = parseSnapshot(h.progress); s.valid) snaps[h.rank] = s;
  if (!d) d = configAbort(in);
  if (!d) d = disagreement(in, snaps);
  if (!d) d = waitFor(in, snaps);
  if (!d) {
    d = make(in.failure.layer() == Layer::kNone ? Layer::kApplication : in.failure.layer(),
             fmt::format("rank {} failed: {}", in.self, in.failure.message()),
             "Every other rank is alive; compare the ranks' flight-recorder dumps.");
    d->confidence = "low";
    if (in.failure.peer() >= 0) d->culprit.ranks.push_back(in.failure.peer());
  }
  addEvidence(*d, in);
  d->culprit.dedupe();
  return *d;
}

std::string renderDiagnosis(const Diagnosis& d) {
  std::string out = fmt::format("layer {}: {}\n", core::layerName(d.layer), d.verdict);
  if (!d.culprit.empty())
    out += fmt::format("  culprit: ranks [{}] hosts [{}] links [{}]\n",
                       fmt::join(d.culprit.ranks, ", "), fmt::join(d.culprit.hosts, ", "),
                       fmt::join(d.culprit.links, ", "));
  out += fmt::format("  next step: {}\n", d.next_step);
  return out;
}

}  // namespace ccscope::diagnostics
