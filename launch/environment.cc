#include "launch/environment.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <cstdlib>
#include <functional>

extern char** environ;

namespace ccscope::launch {

using core::Code;
using core::Layer;
using core::Status;

const char* launchSourceName(LaunchSource s) {
  switch (s) {
    case LaunchSource::kNone:
      return "single";
    case LaunchSource::kLocal:
      return "ccscope-local";
    case LaunchSource::kOpenMpi:
      return "openmpi";
    case LaunchSource::kSlurm:
      return "slurm";
    case LaunchSource::kTorchrun:
      return "torchrun";
  }
  return "?";
}

EnvMap currentEnvironment() {
  EnvMap m;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) m[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return m;
}

std::string generateJobToken() {
  unsigned char b[16];
  size_t got = 0;
  while (got < sizeof b) {
    ssize_t n = getrandom(b + got, sizeof b - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  std::string out;
  for (unsigned char c : b) out += fmt::format("{:02x}", c);
  return out;
}

std::string firstSlurmHost(const std::string& nodelist) {
  size_t end = nodelist.find_first_of(",[");
  if (end == std::string::npos || nodelist[end] == ',') return nodelist.substr(0, end);
  std::string prefix = nodelist.substr(0, end);
  size_t stop = nodelist.find_first_of("-,]", end + 1);
  return prefix + nodelist.substr(end + 1, stop - end - 1);
}

static std::optional<std::string> lookup(const EnvMap& env, const char* k) {
  auto it = env.find(k);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

static core::Result<int> toInt(const EnvMap& env, const char* k) {
  auto v = lookup(env, k);
  try {
    if (v) {
      size_t used = 0;
      int n = std::stoi(*v, &used);
      if (used == v->size() && n >= 0) return n;
    }
  } catch (...) {
  }
  return Status(Code::kInvalidArgument, fmt::format("environment variable {}='{}' is not a valid "
                                                    "non-negative integer",
                                                    k, v.value_or("")))
      .withLayer(Layer::kBootstrap);
}

// Rendezvous address when the launcher does not give one: MASTER_ADDR/PORT or the overrides.
static void fillStore(const EnvMap& env, const EnvOverrides& o, LaunchInfo& info,
                      const std::string& default_host, int default_port) {
  std::string host = lookup(env, "MASTER_ADDR").value_or(default_host);
  int port = default_port;
  if (auto p = lookup(env, "MASTER_PORT")) port = std::atoi(p->c_str());
  if (o.store_port >= 0) port = o.store_port;
  if (auto s = lookup(env, "CCSCOPE_STORE"))
    info.store = *s;
  else if (!host.empty())
    info.store = fmt::format("{}:{}", host, port);
  if (!o.store_addr.empty()) info.store = o.store_addr;
}

static void fillToken(const EnvMap& env, LaunchInfo& info, const std::string& weak_source) {
  if (auto t = lookup(env, "CCSCOPE_JOB_TOKEN")) {
    info.token = *t;
  } else if (!weak_source.empty()) {
    info.token = fmt::format("{:x}", std::hash<std::string>{}(weak_source));
    info.token_is_weak = true;
  }
}

core::Result<LaunchInfo> detectLaunch(const EnvMap& env, const EnvOverrides& o) {
  LaunchInfo info;
  const char *rank_var = nullptr, *size_var = nullptr, *local_var = nullptr;
  if (lookup(env, "CCSCOPE_RANK")) {
    info.source = LaunchSource::kLocal;
    rank_var = "CCSCOPE_RANK", size_var = "CCSCOPE_WORLD_SIZE", local_var = "CCSCOPE_LOCAL_RANK";
  } else if (lookup(env, "OMPI_COMM_WORLD_RANK")) {
    info.source = LaunchSource::kOpenMpi;
    rank_var = "OMPI_COMM_WORLD_RANK", size_var = "OMPI_COMM_WORLD_SIZE";
    local_var = "OMPI_COMM_WORLD_LOCAL_RANK";
  } else if (lookup(env, "SLURM_PROCID") && lookup(env, "SLURM_STEP_NUM_TASKS")) {
    info.source = LaunchSource::kSlurm;
    rank_var = "SLURM_PROCID", size_var = "SLURM_STEP_NUM_TASKS", local_var = "SLURM_LOCALID";
  } else if (lookup(env, "RANK") && lookup(env, "WORLD_SIZE")) {
    info.source = LaunchSource::kTorchrun;
    rank_var = "RANK", size_var = "WORLD_SIZE", local_var = "LOCAL_RANK";
  } else {
    return info;
  }
  CCSCOPE_ASSIGN_OR_RETURN(info.rank, toInt(env, rank_var));
  CCSCOPE_ASSIGN_OR_RETURN(info.size, toInt(env, size_var));
  if (lookup(env, local_var)) {
    CCSCOPE_ASSIGN_OR_RETURN(info.local_rank, toInt(env, local_var));
  }
  for (const char* v : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"})
    if (auto n = toInt(env, v); lookup(env, v) && n) info.local_size = *n;
  if (info.source == LaunchSource::kLocal) info.local_size = info.size;
  if (info.size < 1 || info.rank >= info.size)
    return Status(Code::kInvalidArgument,
                  fmt::format("{}={} is not below {}={}", rank_var, info.rank, size_var, info.size))
        .withLayer(Layer::kBootstrap);
  switch (info.source) {
    case LaunchSource::kLocal:
      fillStore(env, o, info, "", 0);
      fillToken(env, info, "");
      break;
    case LaunchSource::kOpenMpi:  // no address: rank 0 broadcasts it through MPI unless given
      fillStore(env, o, info, "", 29500);
      fillToken(env, info, "");
      break;
    case LaunchSource::kSlurm: {
      std::string job = lookup(env, "SLURM_JOB_ID").value_or("0");
      std::string nodes = lookup(env, "SLURM_STEP_NODELIST")
                              .value_or(lookup(env, "SLURM_JOB_NODELIST").value_or("localhost"));
      fillStore(env, o, info, firstSlurmHost(nodes), 20000 + std::atoi(job.c_str()) % 20000);
      fillToken(env, info, "slurm/" + job + "/" + lookup(env, "SLURM_STEP_ID").value_or(""));
      break;
    }
    case LaunchSource::kTorchrun:
      fillStore(env, o, info, "127.0.0.1", 29500);
      fillToken(env, info,
                "torchrun/" + info.store + "/" + lookup(env, "TORCHELASTIC_RUN_ID").value_or(""));
      break;
    case LaunchSource::kNone:
      break;
  }
  return info;
}

}  // namespace ccscope::launch
