#include "diagnostics/live/probes.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "diagnostics/live/gpu_layer.h"
#include "diagnostics/live/rdma_layer.h"
#include "launch/environment.h"
#include "launch/socket_util.h"
#include "transports/component_report.h"

namespace ccscope::diagnostics {

using core::Deadline;
using core::Layer;
using nlohmann::json;

namespace {

constexpr uint64_t kMinShmBytes = 64 << 20;  // NCCL and MPI want at least this in /dev/shm

bool interfaceExists(const std::string& name) {
  return std::filesystem::exists("/sys/class/net/" + name);
}

// NCCL_SOCKET_IFNAME / UCX_NET_DEVICES style lists: "eth0,ib0", "^docker", "=eth0", "mlx5_0:1".
std::vector<std::string> missingNames(const std::string& list, bool ib) {
  std::vector<std::string> missing;
  if (list.empty() || list[0] == '^') return missing;  // exclusions name nothing required
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma - start);
    if (!item.empty() && item[0] == '=') item.erase(0, 1);
    std::string dev = item.substr(0, item.find(':'));
    bool ok = ib ? std::filesystem::exists("/sys/class/infiniband/" + dev)
                 : interfaceExists(dev) || dev == "all" || dev.empty();
    if (!ok && !ib) {  // prefixes match too (NCCL: "eth" matches eth0)
      for (const auto& e : std::filesystem::directory_iterator("/sys/class/net"))
        ok |= e.path().filename().string().rfind(dev, 0) == 0;
    }
    if (!ok) missing.push_back(dev);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return missing;
}

// Ranks on one host split its GPUs for the kernel probe (one context per GPU, not one per
// rank); the NVML readings are cheap and every rank takes them.
GpuLayerOptions gpuLayerOptions(const ProbeOptions& o) {
  GpuLayerOptions g;
  g.timeout_s = o.timeout_s;
  g.child_command = o.gpu_child_command;
  if (g.child_command.empty()) g.child_command = {"/proc/self/exe", "info", kGpuProbeChildFlag};
  auto launch = launch::detectLaunch(launch::currentEnvironment(), {});
  if (launch && launch->local_size > 0) {
    g.share_index = launch->local_rank;
    g.share_of = launch->local_size;
  }
  return g;
}

json envFacts() {
  json j = json::object();
  for (const char* var :
       {"NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "UCX_NET_DEVICES", "GLOO_SOCKET_IFNAME"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    bool ib = std::string(var) == "NCCL_IB_HCA";
    std::string list = v;
    if (std::string(var) == "UCX_NET_DEVICES") ib = list.find("mlx") != std::string::npos;
    j[var] = {{"value", list}, {"missing", missingNames(list, ib)}};
  }
  return j;
}

}  // namespace

std::string rankLabel(int rank, const std::vector<std::string>& hosts) {
  return fmt::format("rank {} ({})", rank, hostOf(rank, hosts));
}

const std::string& hostOf(int rank, const std::vector<std::string>& hosts) {
  static const std::string unknown = "?";
  return rank >= 0 && rank < static_cast<int>(hosts.size()) ? hosts[rank] : unknown;
}

std::string passesNote(const std::vector<std::string>& each_pass) {
  if (each_pass.size() < 2) return "";
  return fmt::format(" at best in {} passes ({} GB/s)", each_pass.size(),
                     fmt::join(each_pass, ", "));
}

bool allOnOneHost(const std::vector<std::string>& hosts) {
  return std::all_of(hosts.begin(), hosts.end(),
                     [&](const std::string& h) { return h == hosts[0] && h != "?"; });
}

double medianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

const char* outcomeName(ProbeOutcome o) {
  switch (o) {
    case ProbeOutcome::kPass:
      return "PASS";
    case ProbeOutcome::kFail:
      return "FAIL";
    case ProbeOutcome::kWarn:
      return "WARN";
    case ProbeOutcome::kSkip:
      break;
  }
  return "SKIP";
}

json localFacts(const ProbeOptions& o) {
  json j;
  if (!o.ifname.empty()) {
    auto addr = launch::interfaceAddress(o.ifname);
    j["ifname"] = {{"name", o.ifname},
                   {"ok", addr.isOk()},
                   {"detail", addr.isOk() ? *addr : addr.status().message()}};
  }
  struct statvfs sv {};
  if (statvfs("/dev/shm", &sv) == 0)
    j["shm_free_bytes"] = static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize;
  struct rlimit rl {};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
    j["memlock_bytes"] = rl.rlim_cur == RLIM_INFINITY ? -1 : static_cast<int64_t>(rl.rlim_cur);
  j["env"] = envFacts();
  for (const auto& c : transports::probeComponents())
    j["components"][c.name] = {
        {"compiled", c.compiled}, {"devices", c.devices.size()}, {"note", c.note}};
  j["gpu"] = gpuReportJson(runGpuLayer(gpuLayerOptions(o)));
  j["rdma"] = rdmaReportJson(transports::probeRdma(transports::rdmaSysfsRoot()));
  return j;
}

std::vector<ProbeResult> judgeLocalFacts(const std::vector<json>& facts,
                                         const std::vector<std::string>& hosts) {
  ProbeResult ifr{Layer::kHostNetwork, "interface", ProbeOutcome::kPass, "", {}, {}, {}};
  ProbeResult lib{Layer::kLibrary, "environment", ProbeOutcome::kPass, "", {}, {}, {}};
  for (size_t r = 0; r < facts.size(); ++r) {
    const json& f = facts[r];
    std::string who = rankLabel(static_cast<int>(r), hosts);
    if (f.contains("ifname") && !f["ifname"]["ok"].get<bool>()) {
      ifr.outcome = ProbeOutcome::kFail;
      ifr.culprit.ranks.push_back(static_cast<int>(r));
      ifr.evidence.push_back(fmt::format("{}: {}", who, f["ifname"]["detail"].get<std::string>()));
      ifr.detail = fmt::format("interface '{}' does not exist on the ranks that asked for it",
                               f["ifname"]["name"].get<std::string>());
    }
    const json env = f.value("env", json::object());  // named: items() of a temporary dangles
    for (auto& [var, v] : env.items())
      if (!v["missing"].empty()) {
        lib.outcome = ProbeOutcome::kFail;
        lib.culprit.ranks.push_back(static_cast<int>(r));
        lib.evidence.push_back(fmt::format("{}: {}={} names {} which does not exist", who, var,
                                           v["value"].get<std::string>(), v["missing"].dump()));
        lib.detail = fmt::format("{} names devices that do not exist", var);
      }
    if (f.value("shm_free_bytes", kMinShmBytes) < kMinShmBytes) {
      lib.outcome = ProbeOutcome::kFail;
      lib.culprit.ranks.push_back(static_cast<int>(r));
      lib.detail = "/dev/shm is too small for shared-memory transports";
      lib.evidence.push_back(
          fmt::format("{}: /dev/shm has {} B free", who, f["shm_free_bytes"].get<uint64_t>()));
    }
  }
  std::vector<json> gpus, rdmas;
  gpus.reserve(facts.size());
  rdmas.reserve(facts.size());
  for (const json& f : facts) {
    gpus.push_back(f.is_object() ? f.value("gpu", json()) : json());
    rdmas.push_back(f.is_object() ? f.value("rdma", json()) : json());
  }
  ProbeResult gpu = judgeGpuLayer(gpus, hosts);
  ProbeResult rdma = judgeRdmaLayer(rdmas, hosts);
  if (ifr.outcome == ProbeOutcome::kPass) ifr.detail = "interface selection is valid";
  if (lib.outcome == ProbeOutcome::kPass)
    lib.detail = "NCCL/UCX variables, /dev/shm and limits are sane";
  return {ifr, rdma, gpu, lib};
}

ProbeResult judgeConnects(const std::vector<json>& connects,
                          const std::vector<std::string>& hosts) {
  ProbeResult conn{
      Layer::kHostNetwork, "tcp connect", ProbeOutcome::kPass, "every rank connected", {}, {}, {}};
  auto failed = [](const json& j) { return j.is_object() && !j.value("ok", true); };
  auto active = [](const json& j) {
    return j.value("error", std::string()).find("connecting to") != std::string::npos;
  };
  bool any_active = std::any_of(connects.begin(), connects.end(),
                                [&](const json& j) { return failed(j) && active(j); });
  for (size_t r = 0; r < connects.size(); ++r) {
    if (!failed(connects[r]) || (any_active && !active(connects[r]))) continue;
    conn.outcome = ProbeOutcome::kFail;
    conn.detail = "ranks that could not connect to their peers";
    conn.culprit.ranks.push_back(static_cast<int>(r));
    int peer = connects[r].value("peer", -1);
    if (peer >= 0 && peer < static_cast<int>(hosts.size()) &&
        r < hosts.size()) {  // the pair that failed
      conn.culprit.ranks.push_back(peer);
      conn.culprit.hosts = {hosts[r], hosts[peer]};
      conn.culprit.links.push_back(reports::linkName(hosts[r], hosts[peer]));
    }
    conn.evidence.push_back(
        fmt::format("rank {}: {}", r, connects[r].value("error", std::string())));
  }
  return conn;
}

reports::Diagnosis diagnosisOf(const std::vector<ProbeResult>& results) {
  reports::Diagnosis d;
  d.layer = Layer::kNone;
  d.conclusive = true;
  d.confidence = "high";
  d.verdict = "every layer passed";
  d.next_step = "nothing to do";
  static const Layer kOrder[] = {Layer::kBootstrap, Layer::kHostNetwork, Layer::kRdma,
                                 Layer::kGpu,       Layer::kLibrary,     Layer::kApplication};
  for (Layer l : kOrder)
    for (const ProbeResult& r : results) {
      if (r.layer != l || r.outcome != ProbeOutcome::kFail || d.layer != Layer::kNone) continue;
      d.layer = l;
      d.verdict = fmt::format("{}: {}", r.name, r.detail);
      d.culprit = r.culprit;
      d.culprit.dedupe();
      for (const auto& e : r.evidence) d.evidence.push_back({"", 0, e});
      d.next_step =
          !r.next_step.empty() ? r.next_step
          : l == Layer::kHostNetwork
              ? "Check the named hosts' links, routes, firewall and the interface the job uses."
              : "Fix the named configuration, then rerun ccscope diagnose.";
    }
  for (const ProbeResult& r : results) {
    reports::Finding f;
    f.id = r.name;
    f.layer = r.layer;
    f.kind = r.outcome == ProbeOutcome::kFail ? reports::FindingKind::kRoot
                                              : reports::FindingKind::kContext;
    f.verdict = fmt::format("{} {}: {}", outcomeName(r.outcome), r.name, r.detail);
    f.next_step = r.next_step;
    f.culprit = r.culprit;
    f.culprit.dedupe();
    for (const auto& e : r.evidence) f.evidence.push_back({"", 0, e});
    d.findings.push_back(f);
  }
  return d;
}

core::Result<std::vector<json>> gather(launch::StoreClient& c, const std::string& key,
                                       double timeout_s, std::vector<int>* missing) {
  std::vector<json> out(c.size());
  Deadline d = Deadline::afterSeconds(timeout_s);
  for (int r = 0; r < c.size(); ++r) {
    auto v = c.get(fmt::format("diag/{}/{}", key, r), d);
    if (!v) {
      if (v.status().code() != core::Code::kDeadlineExceeded) return v.takeStatus();
      missing->push_back(r);
      continue;
    }
    out[r] = json::parse(*v, nullptr, false);
  }
  return out;
}

bool applyFindings(ProbeResult& r, const std::vector<std::string>& faults,
                   const std::vector<std::string>& warnings, std::string fault_step) {
  auto firstAndCount = [](const std::vector<std::string>& v) {
    return v.size() == 1 ? v[0] : fmt::format("{} (+{} more)", v[0], v.size() - 1);
  };
  r.evidence = faults;
  r.evidence.insert(r.evidence.end(), warnings.begin(), warnings.end());
  if (!faults.empty()) {
    r.outcome = ProbeOutcome::kFail;
    r.detail = firstAndCount(faults);
    r.next_step = std::move(fault_step);
    return true;
  }
  if (warnings.empty()) return false;
  r.outcome = ProbeOutcome::kWarn;
  r.detail = firstAndCount(warnings);
  return true;
}

}  // namespace ccscope::diagnostics
