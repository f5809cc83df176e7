#include "app/run_metadata.h"

#include <fmt/format.h>
#include <unistd.h>

#include <ctime>

#include "launch/environment.h"
#include "transports/component_report.h"
#ifdef CCSCOPE_HAVE_MPI
#include "collectives/baselines/mpi/mpi_runtime.h"
#endif

namespace ccscope::app {

std::string hostName() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

static bool selectedVariable(const std::string& k) {
  if (k == "CCSCOPE_JOB_TOKEN") return false;
  for (const char* p : {"NCCL_", "UCX_", "OMPI_MCA_", "CCSCOPE_", "MASTER_", "SLURM_JOB_ID"})
    if (k.rfind(p, 0) == 0) return true;
  return false;
}

reports::RunMetadata makeRunMetadata(const bench::BenchConfig& cfg,
                                     const std::vector<std::string>& argv,
                                     const std::vector<std::string>& hosts,
                                     const std::string& launcher, const std::string& transport) {
  reports::RunMetadata m;
  m.version = CCSCOPE_VERSION;
  m.argv = argv;
  m.collective = collectives::collectiveName(cfg.collective);
  m.algorithms = cfg.algorithms;
  m.interleaved = cfg.interleave && cfg.algorithms.size() > 1;
  m.host_pages = core::hostPagesName(cfg.host_pages);
  m.transport = transport;
  m.ranks = static_cast<int>(hosts.size());
  m.hosts = hosts;
  m.launcher = launcher;
  m.libraries["fmt"] = fmt::format("{}", FMT_VERSION);
#ifdef CCSCOPE_HAVE_MPI
  m.libraries["mpi"] = collectives::mpi::libraryVersion();
#endif
  for (const auto& c : transports::probeComponents())
    if (c.compiled) m.libraries[c.name] = c.version;
  for (const auto& [k, v] : launch::currentEnvironment())
    if (selectedVariable(k)) m.env[k] = v;
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  m.start_time = buf;
  return m;
}

}  // namespace ccscope::app
