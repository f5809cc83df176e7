#include "diagnostics/analyze/hang_snapshot.h"

#include <fmt/format.h>

#include "reports/diagnosis.h"

namespace ccscope::diagnostics {
namespace {

using nlohmann::json;

constexpr size_t kMaxTextBytes = 1 << 20;  // a py-spy dump or a RAS report, at most

std::string clean(const std::string& s, size_t max = 4096) { return reports::sanitizeText(s, max); }

// Text blocks keep their newlines (sanitizeText would replace them).
std::string cleanBlock(const std::string& s) {
  std::string out;
  size_t start = 0;
  while (start < s.size() && out.size() < kMaxTextBytes) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    out += clean(s.substr(start, end - start), 4096);
    if (end < s.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

std::string stateText(char c) { return std::string(1, c); }

json toJson(const HangThread& t) {
  json j = {{"tid", t.tid},
            {"name", clean(t.name)},
            {"state", stateText(t.state)},
            {"wchan", clean(t.wchan)}};
  if (t.cpu_percent >= 0) j["cpu_percent"] = t.cpu_percent;
  if (!t.kernel_stack.empty()) {
    json st = json::array();
    for (const auto& f : t.kernel_stack) st.push_back(clean(f));
    j["kernel_stack"] = st;
  }
  return j;
}

json toJson(const HangProcess& p) {
  json j = {{"pid", p.pid},
            {"ppid", p.ppid},
            {"rank", p.rank},
            {"local_rank", p.local_rank},
            {"world_size", p.world_size},
            {"job", clean(p.job)},
            {"cmdline", clean(p.cmdline)},
            {"state", stateText(p.state)},
            {"wchan", clean(p.wchan)},
            {"torch", p.torch},
            {"nccl_library", clean(p.nccl_library)}};
  if (p.cpu_percent >= 0) j["cpu_percent"] = p.cpu_percent;
  if (p.rss_kib >= 0) j["rss_kib"] = p.rss_kib;
  j["threads"] = json::array();
  for (const auto& t : p.threads) j["threads"].push_back(toJson(t));
  j["env"] = json::object();
  for (const auto& [k, v] : p.env) j["env"][clean(k)] = clean(v);
  j["helpers"] = p.helpers;
  if (!p.py_stack.empty()) j["py_stack"] = cleanBlock(p.py_stack);
  if (!p.py_stack_error.empty()) j["py_stack_error"] = clean(p.py_stack_error);
  if (p.gpu_sm_percent) j["gpu_sm_percent"] = *p.gpu_sm_percent;
  if (p.gpu_memory_mib) j["gpu_memory_mib"] = *p.gpu_memory_mib;
  if (!p.gpu_error.empty()) j["gpu_error"] = clean(p.gpu_error);
  if (!p.fr_dump.empty()) {
    auto doc = json::parse(p.fr_dump, nullptr, false);
    if (!doc.is_discarded()) j["fr_dump"] = std::move(doc);
  }
  if (!p.fr_source.empty()) j["fr_source"] = clean(p.fr_source);
  return j;
}

int intOr(const json& j, const char* k, int dflt) {
  return j.contains(k) && j[k].is_number_integer() ? j[k].get<int>() : dflt;
}
double numberOr(const json& j, const char* k, double dflt) {
  return j.contains(k) && j[k].is_number() ? j[k].get<double>() : dflt;
}
std::string stringOr(const json& j, const char* k) {
  return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
}
char stateOf(const json& j) {
  const std::string s = stringOr(j, "state");
  return s.empty() ? '?' : s[0];
}

HangThread threadFromJson(const json& j) {
  HangThread t;
  t.tid = intOr(j, "tid", 0);
  t.name = stringOr(j, "name");
  t.state = stateOf(j);
  t.wchan = stringOr(j, "wchan");
  t.cpu_percent = numberOr(j, "cpu_percent", -1);
  if (j.contains("kernel_stack") && j["kernel_stack"].is_array()) {
    for (const auto& f : j["kernel_stack"])
      if (f.is_string()) t.kernel_stack.push_back(f.get<std::string>());
  }
  return t;
}

HangProcess processFromJson(const json& j) {
  HangProcess p;
  p.pid = intOr(j, "pid", 0);
  p.ppid = intOr(j, "ppid", 0);
  p.rank = intOr(j, "rank", -1);
  p.local_rank = intOr(j, "local_rank", -1);
  p.world_size = intOr(j, "world_size", -1);
  p.job = stringOr(j, "job");
  p.cmdline = stringOr(j, "cmdline");
  p.state = stateOf(j);
  p.wchan = stringOr(j, "wchan");
  p.cpu_percent = numberOr(j, "cpu_percent", -1);
  p.rss_kib = static_cast<long>(numberOr(j, "rss_kib", -1));
  p.torch = j.contains("torch") && j["torch"].is_boolean() && j["torch"].get<bool>();
  p.nccl_library = stringOr(j, "nccl_library");
  if (j.contains("threads") && j["threads"].is_array()) {
    for (const auto& t : j["threads"])
      if (t.is_object()) p.threads.push_back(threadFromJson(t));
  }
  if (j.contains("env") && j["env"].is_object()) {
    for (const auto& [k, v] : j["env"].items())
      if (v.is_string()) p.env[k] = v.get<std::string>();
  }
  if (j.contains("helpers") && j["helpers"].is_array()) {
    for (const auto& h : j["helpers"])
      if (h.is_number_integer()) p.helpers.push_back(h.get<int>());
  }
  p.py_stack = stringOr(j, "py_stack");
  p.py_stack_error = stringOr(j, "py_stack_error");
  if (j.contains("gpu_sm_percent") && j["gpu_sm_percent"].is_number_integer())
    p.gpu_sm_percent = j["gpu_sm_percent"].get<int>();
  if (j.contains("gpu_memory_mib") && j["gpu_memory_mib"].is_number_integer())
    p.gpu_memory_mib = j["gpu_memory_mib"].get<long long>();
  p.gpu_error = stringOr(j, "gpu_error");
  if (j.contains("fr_dump") && j["fr_dump"].is_object()) p.fr_dump = j["fr_dump"].dump();
  p.fr_source = stringOr(j, "fr_source");
  return p;
}

}  // namespace

json toJson(const HangSnapshot& s) {
  json j = {{"format", kHangSnapshotFormat}, {"version", kHangSnapshotVersion},
            {"node", clean(s.node)},         {"taken_at", s.taken_at},
            {"timeout_s", s.timeout_s},      {"seconds", s.seconds}};
  j["sources"] = json::array();
  for (const auto& src : s.sources) {
    j["sources"].push_back(
        {{"name", clean(src.name)}, {"status", clean(src.status)}, {"detail", clean(src.detail)}});
  }
  j["processes"] = json::array();
  for (const auto& p : s.processes) j["processes"].push_back(toJson(p));
  j["ras"] = {{"address", clean(s.ras_address)}};
  if (!s.ras_text.empty()) j["ras"]["text"] = cleanBlock(s.ras_text);
  if (!s.ras_json.empty()) {
    auto doc = json::parse(s.ras_json, nullptr, false);
    if (!doc.is_discarded()) j["ras"]["json"] = std::move(doc);
  }
  j["kernel_log"] = json::array();
  for (const auto& l : s.kernel_log) j["kernel_log"].push_back(clean(l));
  j["rdma_devices"] = json::array();
  for (const auto& d : s.rdma_devices) j["rdma_devices"].push_back(clean(d));
  return j;
}

bool isHangSnapshot(const json& j) {
  return j.is_object() && j.contains("format") && j["format"].is_string() &&
         j["format"].get<std::string>() == kHangSnapshotFormat;
}

core::Result<HangSnapshot> hangSnapshotFromJson(const json& j) {
  if (!isHangSnapshot(j))
    return core::Status(core::Code::kInvalidArgument, "not a ccscope hang snapshot");
  const int version = intOr(j, "version", -1);
  if (version != kHangSnapshotVersion) {
    return core::Status(core::Code::kInvalidArgument,
                        fmt::format("hang snapshot version {} (this build reads {})", version,
                                    kHangSnapshotVersion));
  }
  HangSnapshot s;
  s.node = stringOr(j, "node");
  s.taken_at = stringOr(j, "taken_at");
  s.timeout_s = numberOr(j, "timeout_s", 0);
  s.seconds = numberOr(j, "seconds", 0);
  if (j.contains("sources") && j["sources"].is_array()) {
    for (const auto& src : j["sources"]) {
      if (!src.is_object()) continue;
      s.sources.push_back(
          {stringOr(src, "name"), stringOr(src, "status"), stringOr(src, "detail")});
    }
  }
  if (j.contains("processes") && j["processes"].is_array()) {
    for (const auto& p : j["processes"])
      if (p.is_object()) s.processes.push_back(processFromJson(p));
  }
  if (j.contains("ras") && j["ras"].is_object()) {
    const auto& r = j["ras"];
    s.ras_address = stringOr(r, "address");
    s.ras_text = stringOr(r, "text");
    if (r.contains("json") && r["json"].is_object()) s.ras_json = r["json"].dump();
  }
  if (j.contains("kernel_log") && j["kernel_log"].is_array()) {
    for (const auto& l : j["kernel_log"])
      if (l.is_string()) s.kernel_log.push_back(l.get<std::string>());
  }
  if (j.contains("rdma_devices") && j["rdma_devices"].is_array()) {
    for (const auto& d : j["rdma_devices"])
      if (d.is_string()) s.rdma_devices.push_back(d.get<std::string>());
  }
  return s;
}

}  // namespace ccscope::diagnostics
