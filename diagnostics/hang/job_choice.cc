#include "diagnostics/hang/job_choice.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace ccscope::diagnostics {
namespace {

std::string envValue(const std::vector<std::pair<std::string, std::string>>& env,
                     const std::string& key) {
  for (const auto& [k, v] : env)
    if (k == key) return v;
  return {};
}

}  // namespace

std::string jobKey(const std::vector<std::pair<std::string, std::string>>& env) {
  const std::string run = envValue(env, "TORCHELASTIC_RUN_ID");
  const std::string addr = envValue(env, "MASTER_ADDR"), port = envValue(env, "MASTER_PORT");
  if (!addr.empty() || !port.empty()) {
    return fmt::format("torch {}:{}{}", addr, port, run.empty() ? "" : " run " + run);
  }
  const std::string slurm = envValue(env, "SLURM_JOB_ID");
  if (!slurm.empty()) return fmt::format("slurm {}.{}", slurm, envValue(env, "SLURM_STEP_ID"));
  const std::string pmix = envValue(env, "PMIX_NAMESPACE");
  if (!pmix.empty()) return "pmix " + pmix;
  const std::string ompi = envValue(env, "OMPI_MCA_ess_base_jobid");
  if (!ompi.empty()) return "ompi " + ompi;
  return {};
}

bool namesJob(const std::string& key, const std::string& text) {
  for (size_t at = key.find(text); at != std::string::npos; at = key.find(text, at + 1)) {
    const size_t end = at + text.size();
    if (end == key.size() || key[end] == ' ' || key[end] == '.') return true;
  }
  return false;
}

bool chooseJob(const std::string& job, bool pids_given, std::vector<HangProcess>& procs,
               std::vector<std::string>& choices) {
  std::map<std::string, std::vector<int>> jobs;  // key -> pids
  for (const auto& p : procs) jobs[p.job].push_back(p.pid);
  auto describe = [&jobs] {
    std::vector<std::string> out;
    for (const auto& [key, pids] : jobs) {
      std::string list;
      for (size_t i = 0; i < pids.size() && i < 8; ++i)
        list += fmt::format("{}{}", i ? "," : "", pids[i]);
      out.push_back(fmt::format("{} ({} process(es): pids {}{})",
                                key.empty() ? "(no job key)" : key, pids.size(), list,
                                pids.size() > 8 ? ",..." : ""));
    }
    return out;
  };
  if (!job.empty()) {
    std::erase_if(procs, [&job](const HangProcess& p) { return !namesJob(p.job, job); });
    std::set<std::string> kept;
    for (const auto& p : procs) kept.insert(p.job);
    if (kept.size() == 1) return true;
  } else if (pids_given || jobs.size() <= 1) {
    return true;
  }
  choices = describe();
  procs.clear();
  return false;
}

}  // namespace ccscope::diagnostics
