// Where this process sits in the job: which launcher started it (ccscope's own --np launcher,
// Open MPI/PMIx, Slurm, a torchrun-style environment, or nothing), its rank and the rendezvous.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/status.h"

namespace ccscope::launch {

enum class LaunchSource { kNone, kLocal, kOpenMpi, kSlurm, kTorchrun };
const char* launchSourceName(LaunchSource s);

struct LaunchInfo {
  LaunchSource source = LaunchSource::kNone;
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 0;          // ranks on this host, when the launcher says (0: unknown)
  std::string store;           // host:port of the rendezvous store; empty: learn it through MPI
  std::string token;           // job token; empty: rank 0 generates one (MPI broadcast)
  bool token_is_weak = false;  // derived from public job ids, not a secret
};

struct EnvOverrides {
  std::string store_addr;  // --store HOST:PORT
  int store_port = -1;     // --store-port
};

using EnvMap = std::map<std::string, std::string>;
EnvMap currentEnvironment();

// Pure function of the environment, so tests can feed any launcher's variables.
core::Result<LaunchInfo> detectLaunch(const EnvMap& env, const EnvOverrides& overrides);

// 128 random bits as hex, from the kernel's CSPRNG.
std::string generateJobToken();

// First host of a Slurm node list: "node[03-05,7],gpu1" -> "node03".
std::string firstSlurmHost(const std::string& nodelist);

}  // namespace ccscope::launch
