#include "diagnostics/analyze/device_tracker.h"

#include <fmt/format.h>

#include <cctype>

#include "diagnostics/analyze/line_prefix.h"

namespace ccscope::diagnostics {

namespace {

constexpr size_t kMaxSeats = 4096;  // bounded memory on logs of thousands of ranks
constexpr size_t kMaxClashes = 8;
constexpr size_t kMaxToken = 40;

// The token after " NAME " in `body` ("rank 3" -> "3"); empty when absent.
std::string_view fieldAfter(std::string_view body, std::string_view name) {
  for (size_t at = body.find(name); at != std::string_view::npos; at = body.find(name, at + 1)) {
    const size_t from = at + name.size() + 1;
    if (at == 0 || body[at - 1] != ' ' || from > body.size() || body[from - 1] != ' ') continue;
    size_t end = from;
    while (end < body.size() && end - from < kMaxToken &&
           std::isalnum(static_cast<unsigned char>(body[end])))
      ++end;
    return body.substr(from, end - from);
  }
  return {};
}

int toInt(std::string_view s) {
  if (s.empty() || s.size() > 7) return -1;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

NcclInitLine parseNcclInitLine(std::string_view body) {
  NcclInitLine out;
  const std::string_view host = ncclHeaderHost(body);
  if (host.empty() || body.substr(host.size(), 1) != ":") return out;
  const std::string_view rest = body.substr(host.size() + 1);
  const size_t colon = rest.find(':');
  if (colon == std::string_view::npos || colon == 0) return out;
  const std::string_view bus = fieldAfter(body, "busId");
  const int rank = toInt(fieldAfter(body, "rank"));
  const std::string_view nranks = fieldAfter(body, "nranks");
  if (bus.empty() || rank < 0 || nranks.empty()) return out;
  out.host = host;
  out.pid = rest.substr(0, colon);
  out.bus_id = bus;
  out.rank = rank;
  // Without a commId (NCCL before 2.18 prints none), communicators of one size are one.
  const std::string_view comm = fieldAfter(body, "commId");
  out.comm = comm.empty() ? "nranks " + std::string(nranks) : std::string(comm);
  return out;
}

const FindingSpec& duplicateDeviceSpec() {
  static const FindingSpec spec{
      "application.duplicate-device",
      core::Layer::kApplication,
      reports::FindingKind::kRoot,
      60,
      "two processes joined one communicator on the same GPU (NCCL refuses this: 'Duplicate GPU "
      "detected'): the ranks do not each select their own device",
      "Make each rank select its own GPU (torch.cuda.set_device(LOCAL_RANK), or "
      "CUDA_VISIBLE_DEVICES per rank), and start no more ranks per node than it has GPUs."};
  return spec;
}

void DeviceTracker::parseLine(std::string_view body, const reports::Evidence& where) {
  const bool start = body.find("Init START") != std::string_view::npos;
  const bool complete = !start && body.find("Init COMPLETE") != std::string_view::npos;
  if (!start && !complete) return;
  NcclInitLine l = parseNcclInitLine(body);
  if (l.host.empty()) return;
  // NCCL checks for two ranks on one device during init: a communicator that completed its init
  // passed (processes with their own NCCL_HOSTID may share a GPU).
  if (complete) {
    if (accepted_.size() < kMaxSeats) accepted_.insert(l.host + '\n' + l.comm);
    return;
  }
  if (clashes_.size() >= kMaxClashes) return;
  const std::string key = l.host + '\n' + l.comm + '\n' + l.bus_id;
  const auto it = seats_.find(key);
  if (it == seats_.end()) {
    if (seats_.size() < kMaxSeats) seats_.emplace(key, Seat{l.pid, l.rank, where});
    return;
  }
  // One process may hold a GPU in several communicators; two processes may not share one.
  if (it->second.pid == l.pid || it->second.rank == l.rank) return;
  for (const auto& c : clashes_)
    if (c.host == l.host && c.bus_id == l.bus_id) return;
  clashes_.push_back({l.host, l.comm, l.bus_id, it->second, Seat{l.pid, l.rank, where}});
}

std::vector<Event> DeviceTracker::conclude() const {
  std::vector<Event> out;
  for (const auto& c : clashes_) {
    if (accepted_.count(c.host + '\n' + c.comm)) continue;
    Event e;
    e.spec = &duplicateDeviceSpec();
    e.verdict = fmt::format(
        "ranks {} and {} joined one communicator on the same GPU (busId {}): the ranks do not "
        "each select their own device",
        c.first.rank, c.second.rank, c.bus_id);
    e.rank = c.second.rank;
    e.other_rank = c.first.rank;
    e.host = c.host;
    e.evidence = {c.first.where, c.second.where};
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

constexpr int kMaxWorld = 1 << 20;
constexpr size_t kMaxClaimedRanks = 16384;  // past it the claims are not judged (memory)

// The number right after `marker` ("GLOBAL_RANK: 3" -> 3); -1 when there is none.
int numberAfter(std::string_view body, std::string_view marker) {
  const size_t at = body.find(marker);
  if (at == std::string_view::npos) return -1;
  size_t i = at + marker.size(), end = i;
  while (end < body.size() && end - i < 7 && std::isdigit(static_cast<unsigned char>(body[end])))
    ++end;
  return end > i ? toInt(body.substr(i, end - i)) : -1;
}

}  // namespace

const FindingSpec& rankClaimedTwiceSpec() {
  static const FindingSpec spec{
      "bootstrap.rank-claimed-twice",
      core::Layer::kBootstrap,
      reports::FindingKind::kRoot,
      60,
      "one rank was claimed by several processes while other ranks never appeared: the launcher "
      "started processes with each other's ranks",
      "Make the launcher's task layout match the framework's (Slurm --nodes and "
      "--ntasks-per-node against num_nodes x devices; one launcher per node, not one per "
      "process), and check that each process derives its rank from its own task id."};
  return spec;
}

void RankClaimTracker::parseClaim(std::string_view body, const reports::Evidence& where) {
  const int rank = numberAfter(body, "GLOBAL_RANK: ");
  const size_t member = body.find("MEMBER: ");
  if (rank < 0 || member == std::string_view::npos) return;
  const size_t slash = body.find('/', member);
  const int world = slash == std::string_view::npos ? -1 : numberAfter(body.substr(slash), "/");
  if (world <= 0 || world > kMaxWorld || rank >= world) return;
  world_ = std::max(world_, world);
  if (claims_.size() >= kMaxClaimedRanks && !claims_.count(rank)) {
    overflow_ = true;
    return;
  }
  auto [it, first] = claims_.try_emplace(rank, Claim{0, where});
  if (++it->second.lines == 2 && twice_ < 0) {
    twice_ = rank;
    evidence_ = {it->second.first, where};
  }
}

std::vector<Event> RankClaimTracker::conclude() const {
  const auto distinct = static_cast<int>(claims_.size());
  if (registered_ || overflow_ || twice_ < 0 || distinct >= world_) return {};
  Event e;
  e.spec = &rankClaimedTwiceSpec();
  e.verdict = fmt::format(
      "rank {} was claimed by {} processes while {} of the {} ranks never appeared: the "
      "launcher started processes with each other's ranks",
      twice_, claims_.at(twice_).lines, world_ - distinct, world_);
  e.rank = twice_;
  e.evidence = evidence_;
  return {e};
}

}  // namespace ccscope::diagnostics
