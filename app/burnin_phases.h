// The phases of `ccscope burnin` that run after the pairs matrix, over the job's transport:
// the soak (samples of links and collectives at an interval, then drift per series) and the
// congestion test (victims alone and under aggressor traffic). Each runs on every rank; rank 0
// records and judges.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "burnin/profile.h"
#include "collectives/collective_backend.h"
#include "core/status.h"
#include "launch/store_client.h"
#include "reports/jsonl_writer.h"
#include "transports/transport.h"

namespace ccscope::app {

// One finding for the summary: a host, a link, a collective or the fabric as a whole.
struct BurninFinding {
  std::string kind;  // "host", "link", "collective", "fabric"
  std::string unit_a, unit_b;
  std::string verdict;  // "degraded", "failed"
  std::string phase;    // "pairs", "sweep", "soak", "congestion"
  std::string why;
  double since_s = -1;  // soak: when it started, seconds into the soak
  nlohmann::json toJson() const;
};

struct BurninContext {
  const burnin::Profile& profile;
  launch::StoreClient& c;
  transports::Transport& t;
  const transports::MemoryRegion& buf;
  const std::vector<std::string>& hosts;
  reports::JsonLinesWriter* json;                     // rank 0's, or null
  collectives::CollectiveBackend* sampler = nullptr;  // the soak's collectives
  std::string latency_unjudged;  // why p99 is not judged (latencyUnjudged), or ""
  bool root() const { return c.rank() == 0; }
  void record(const nlohmann::json& j) const {
    if (json != nullptr) json->write(j);
  }
};

// Rank 0 appends its findings to `out`.
core::Status runSoak(const BurninContext& x, std::vector<BurninFinding>& out);
core::Status runCongestion(const BurninContext& x, std::vector<BurninFinding>& out);

}  // namespace ccscope::app
