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

}  // namespace ccscope::diagnostics
