#include "app/pairs_job.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "app/command.h"
#include "app/failure_report.h"
#include "app/job_launch.h"
#include "app/pairs_report.h"
#include "app/rendezvous.h"
#include "reports/jsonl_writer.h"

namespace ccscope::app {

using burnin::Pair;
using burnin::Round;
using core::Code;
using core::Deadline;
using core::Status;
using nlohmann::json;

namespace {

json figuresJson(const burnin::PairFigures& f) {
  return {{"bw_uni_gbps", f.uni_gbps},
          {"bw_bidir_gbps", f.bidir_gbps},
          {"p50_us", f.p50_us},
          {"p99_us", f.p99_us},
          {"p999_us", f.p999_us},
          {"max_us", f.max_us},
          {"lat_samples", f.lat_samples},
          {"uni_messages", f.uni_messages},
          {"bidir_messages", f.bidir_messages}};
}

class PairsRank {
 public:
  PairsRank(const PairsOptions& o, const launch::LaunchInfo& info) : o_(o), info_(info) {}
  int run();

 private:
  Status setUp();
  Status runRounds(const std::vector<Round>& rounds, bool retest);
  Status collect(const Round& round, int round_no, bool retest);
  Status retestSuspects();
  int fail(const Status& s);
  bool root() const { return info_.rank == 0; }

  const PairsOptions& o_;
  launch::LaunchInfo info_;
  Rendezvous rv_;
  std::vector<std::string> hosts_;
  std::unique_ptr<transports::Transport> t_;
  std::vector<char> mem_;
  transports::Registration reg_;
  std::unique_ptr<reports::JsonLinesWriter> json_;
  PairsBook book_;  // rank 0: every pair measured, and the units they stand for
  int round_no_ = 0;
};

Status PairsRank::setUp() {
  CCSCOPE_RETURN_IF_ERROR(joinRendezvous(info_, o_.store_bind, o_.pair.timeout_s, rv_));
  CCSCOPE_ASSIGN_OR_RETURN(hosts_, gatherHosts(*rv_.client, o_.pair.timeout_s));
  auto t = transports::makeTransport(o_.transport,
                                     jobTransportOptions(info_, *rv_.client, o_.ifname, 1, 0));
  if (!t) return t.status();
  t_ = std::move(*t);
  CCSCOPE_RETURN_IF_ERROR(t_->connect(*rv_.client, Deadline::afterSeconds(o_.pair.timeout_s))
                              .prepend(fmt::format("{} transport set-up", o_.transport)));
  mem_.assign(2 * o_.pair.bytes + 64, 0);
  CCSCOPE_ASSIGN_OR_RETURN(reg_, t_->registerMemory(mem_.data(), mem_.size()));
  if (root() && !o_.json_path.empty()) {
    CCSCOPE_ASSIGN_OR_RETURN(json_, reports::JsonLinesWriter::open(o_.json_path));
  }
  return Status::ok();
}

// Each rank measures with its partner of the round, if it has one; the lead publishes the
// figures; everyone meets at the round's barrier, and rank 0 streams the round's pairs.
Status PairsRank::runRounds(const std::vector<Round>& rounds, bool retest) {
  launch::StoreClient& c = *rv_.client;
  for (const Round& round : rounds) {
    const int r = round_no_++;
    for (const Pair& p : round) {
      if (p.first != info_.rank && p.second != info_.rank) continue;
      const bool lead = p.first == info_.rank;
      const int peer = lead ? p.second : p.first;
      auto f = burnin::measurePair(*t_, reg_.region(), peer, lead, o_.pair);
      if (!f)
        return f.takeStatus().prepend(fmt::format("pair {}-{} (round {})", p.first, p.second, r));
      if (lead)
        CCSCOPE_RETURN_IF_ERROR(
            c.put(fmt::format("pairs/{}/{}", r, p.first), figuresJson(*f).dump()));
    }
    CCSCOPE_RETURN_IF_ERROR(
        c.barrier(fmt::format("pairs/round/{}", r), Deadline::afterSeconds(2 * o_.pair.timeout_s)));
    if (root()) CCSCOPE_RETURN_IF_ERROR(collect(round, r, retest));
  }
  return Status::ok();
}

Status PairsRank::collect(const Round& round, int round_no, bool retest) {
  for (const Pair& p : round) {
    CCSCOPE_ASSIGN_OR_RETURN(std::string v,
                             rv_.client->get(fmt::format("pairs/{}/{}", round_no, p.first),
                                             Deadline::afterSeconds(o_.pair.timeout_s)));
    json rec = book_.add(round_no, retest, p, json::parse(v, nullptr, false));
    if (json_) json_->write(rec);
    printPairRow(rec);
  }
  return Status::ok();
}

// Rank 0 judges the matrix, picks the suspects' retests and publishes them; every rank runs
// them. The judgement after a retest may name suspects no retest covered: up to three passes,
// until a pass plans nothing.
Status PairsRank::retestSuspects() {
  launch::StoreClient& c = *rv_.client;
  for (int pass = 0; pass < 3; ++pass) {
    const std::string key = fmt::format("pairs/retest/{}", pass);
    if (root()) {
      std::vector<Pair> pairs = o_.retest ? book_.retestPairs(o_) : std::vector<Pair>{};
      json plan = json::array();
      for (const Round& r : burnin::packRounds(pairs)) plan.push_back(r);
      CCSCOPE_RETURN_IF_ERROR(c.put(key, plan.dump()));
      if (!pairs.empty())
        std::printf("# retesting %zu suspect pair(s) against known-good partners\n", pairs.size());
    }
    CCSCOPE_ASSIGN_OR_RETURN(std::string text,
                             c.get(key, Deadline::afterSeconds(2 * o_.pair.timeout_s)));
    const json plan = json::parse(text, nullptr, false);
    if (!plan.is_array()) return Status(Code::kInternal, "pairs: rank 0 published no retest plan");
    if (plan.empty()) return Status::ok();
    CCSCOPE_RETURN_IF_ERROR(runRounds(plan.get<std::vector<Round>>(), true));
  }
  return Status::ok();
}

int PairsRank::fail(const Status& s) {
  FailureContext ctx;
  ctx.rank = info_.rank;
  ctx.client = rv_.client.get();
  ctx.json = json_.get();
  ctx.json_path = root() ? o_.json_path : "";
  ctx.hosts = hosts_;
  ctx.host = hosts_.empty() ? "" : hosts_[info_.rank];
  ctx.local_rank = info_.local_rank;
  ctx.local_size = info_.local_size;
  return reportFailure(s, ctx);
}

int PairsRank::run() {
  if (Status s = setUp(); !s.isOk()) return fail(s);
  std::vector<Round> rounds = burnin::planRounds(o_.scope, hosts_, o_.rounds_k, o_.seed);
  if (root()) {
    book_.start(o_, hosts_, rounds);
    json head = book_.runRecord(o_, rounds);
    if (json_) json_->write(head);
    printHeader(head);
  }
  Status s = runRounds(rounds, false);
  if (s.isOk()) s = retestSuspects();
  if (!s.isOk()) return fail(s);
  int code = kExitOk;
  if (root()) code = book_.finish(o_, json_.get());
  t_->close();
  lingerWhileOthersNeedTheStore(rv_, info_.rank);
  return code;
}

}  // namespace

int runPairsRank(const PairsOptions& o, const launch::LaunchInfo& info) {
  PairsRank rank(o, info);
  return rank.run();
}

}  // namespace ccscope::app
