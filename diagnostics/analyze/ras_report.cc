#include "diagnostics/analyze/ras_report.h"

#include <fmt/format.h>

#include <map>
#include <regex>

namespace ccscope::diagnostics {
namespace {

using nlohmann::json;

long num(const json& j, const char* k, long dflt = -1) {
  return j.is_object() && j.contains(k) && j[k].is_number_integer() ? j[k].get<long>() : dflt;
}

std::string str(const json& j, const char* k) {
  if (!j.is_object() || !j.contains(k)) return "unknown";
  if (j[k].is_string()) return j[k].get<std::string>();
  if (j[k].is_number_integer()) return std::to_string(j[k].get<long>());
  return "unknown";
}

bool flag(const json& j, const char* k) {
  return j.is_object() && j.contains(k) && j[k].is_boolean() && j[k].get<bool>();
}

// " -- GPU 0 managed by process 580 on node 192.0.2.2", as the text report places it.
std::string where(const json& r) {
  return fmt::format(" -- GPU {} managed by process {} on node {}", str(r, "cuda_dev"),
                     str(r, "pid"), str(r, "host"));
}

// A communicator's missing ranks, as the text report lists them: the dead processes first.
void missingRanks(const json& c, const std::string& id, std::string& out) {
  const json empty = json::array();
  const json& missing =
      c.contains("missing_ranks") && c["missing_ranks"].is_array() ? c["missing_ranks"] : empty;
  if (!missing.empty()) {
    int dead = 0;
    for (const auto& r : missing)
      if (r.contains("status") && flag(r["status"], "considered_dead")) ++dead;
    // As the text report orders them: the dead processes first, then the comm's missing ranks.
    if (dead > 0) {
      out += fmt::format(
          "DEAD\n  {} job process{} considered dead (unreachable via the RAS "
          "network)\n",
          dead, dead == 1 ? " is" : "es are");
    }
    out += fmt::format("{} INCOMPLETE\n  Missing communicator data from {} rank{}\n", id,
                       missing.size(), missing.size() == 1 ? "" : "s");
    for (const auto& r : missing) out += fmt::format("  Rank {}{}\n", num(r, "rank"), where(r));
  }
}
}  // namespace

std::string repairRasJson(const std::string& text) {
  static const std::regex missing_comma(R"(("nvml_dev"\s*:\s*-?\d+)(\s*\n\s*"status"))");
  return std::regex_replace(text, missing_comma, "$1,$2");
}

std::string rasJsonAsText(const json& report) {
  if (!report.is_object() || !report.contains("communicators")) return {};
  std::string out;
  if (report.contains("nccl_version"))
    out += fmt::format("NCCL version {}\n", str(report, "nccl_version"));
  const json& comms = report["communicators"];
  if (!comms.is_array()) return out;
  int index = 0;
  for (const auto& c : comms) {
    if (!c.is_object()) continue;
    const std::string id = fmt::format("#{} ({})", index++, str(c, "hash"));
    // Operation counts per collective: the ranks that launched fewer are behind.
    std::map<std::string, std::map<long, std::vector<const json*>>> counts;
    const json empty = json::array();
    const json& ranks = c.contains("ranks") && c["ranks"].is_array() ? c["ranks"] : empty;
    for (const auto& r : ranks) {
      if (!r.is_object()) continue;
      if (r.contains("collective_counts") && r["collective_counts"].is_object()) {
        for (const auto& [op, n] : r["collective_counts"].items())
          if (n.is_number_integer()) counts[op][n.get<long>()].push_back(&r);
      }
      const json& st = r.contains("status") ? r["status"] : empty;
      const long init = num(st, "init_state", 0), async = num(st, "async_error", 0);
      if (init != 0 && init != 7)
        out += fmt::format("{} ERROR\n  Rank {} reported initialization error {}{}\n", id,
                           num(r, "rank"), init, where(r));
      if (async != 0 && async != 7)
        out += fmt::format("{} ERROR\n  Rank {} reported asynchronous error {}{}\n", id,
                           num(r, "rank"), async, where(r));
      if (flag(st, "abort_flag"))
        out +=
            fmt::format("{} ABORT\n  Rank {} has status ABORT{}\n", id, num(r, "rank"), where(r));
    }
    for (const auto& [op, by_count] : counts) {
      if (by_count.size() < 2) continue;
      out += fmt::format("{} MISMATCH\n  Communicator ranks have different {} operation counts\n",
                         id, op);
      for (const auto& [n, rs] : by_count) {
        for (const json* r : rs) {
          out += n == 0 ? fmt::format("  Rank {} has not launched any operations{}\n",
                                      num(*r, "rank"), where(*r))
                        : fmt::format("  Rank {} has launched up to operation {}{}\n",
                                      num(*r, "rank"), n, where(*r));
        }
      }
    }
    missingRanks(c, id, out);
  }
  return out;
}

}  // namespace ccscope::diagnostics
