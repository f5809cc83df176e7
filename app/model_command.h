// `ccscope model fit|predict|tail` (docs/model.md):
//   fit RESULTS.jsonl... [--out FIT.jsonl] [--cores N] [--one-machine]
//   predict (--fit FIT.jsonl [--transport T] | --preset NAME) [--ranks LIST] [--ranks-per-host R]
//           [-b SIZE -e SIZE -f F] [--collective C] [--algo LIST] [--json F] [topology options]
//   tail (--pairs PAIRS.jsonl | --link-p50 US --link-p99 US [--link-bw GBPS]) [--ranks N]
//        [--size S] [--bad-fraction F --bad-p99-factor X]
// Exit 0, or 2 for bad input (one line naming it).
#pragma once

#include <string>
#include <vector>

#include "app/command.h"
#include "core/status.h"

namespace ccscope::app {

Command addModelCommand(CLI::App& root);

struct ModelPredictFlags {
  std::string fit, transport, preset;
  std::string ranks, collective = "allreduce", algo = "all", json;
  std::string minbytes = "1M", maxbytes = "1G";
  double stepfactor = 2;
  int ranks_per_host = 0, cores = -1, nics = 0, hosts_per_leaf = -1;
  bool one_machine = false;
  double nic_gbps = 0, intra_gbps = 0, oversubscription = 0;
};
int runModelPredict(const ModelPredictFlags& f);

struct ModelTailFlags {
  std::string pairs, size = "64M", json;
  double link_p50_us = 0, link_p99_us = 0, link_gbps = 0;
  int ranks = 0;
  double bad_fraction = 0, bad_p99_factor = 3, bad_bw_factor = 1;
};
int runModelTail(const ModelTailFlags& f);

// "8,64,1024" or "8:100000" (powers of two from 8, then 100000); an error names the list.
core::Result<std::vector<int>> parseRankList(const std::string& s);

}  // namespace ccscope::app
