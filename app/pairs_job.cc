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

constexpr int kRetestRepeats = 3;

json pairsFiguresJson(const burnin::PairFigures& f) {
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

Status runPairRounds(launch::StoreClient& c, transports::Transport& t,
                     const transports::MemoryRegion& buf, const std::vector<Round>& rounds,
                     const burnin::PairSettings& settings, const std::string& key, int& round_no,
                     const std::function<Status(int, const Pair&, const json&)>& on_pair) {
  const int self = c.rank();
  for (const Round& round : rounds) {
    const int r = round_no++;
    for (const Pair& p : round) {
      if (p.first != self && p.second != self) continue;
      const bool lead = p.first == self;
      auto f = burnin::measurePair(t, buf, lead ? p.second : p.first, lead, settings);
      if (!f)
        return f.takeStatus().prepend(fmt::format("pair {}-{} (round {})", p.first, p.second, r));
      if (lead)
        CCSCOPE_RETURN_IF_ERROR(
            c.put(fmt::format("{}/{}/{}", key, r, p.first), pairsFiguresJson(*f).dump()));
    }
    CCSCOPE_RETURN_IF_ERROR(c.barrier(fmt::format("{}/round/{}", key, r),
                                      Deadline::afterSeconds(2 * settings.timeout_s)));
    if (self == 0) {
      for (const Pair& p : round) {
        CCSCOPE_ASSIGN_OR_RETURN(std::string v, c.get(fmt::format("{}/{}/{}", key, r, p.first),
                                                      Deadline::afterSeconds(settings.timeout_s)));
        CCSCOPE_RETURN_IF_ERROR(on_pair(r, p, json::parse(v, nullptr, false)));
      }
    }
    // The next round waits for rank 0's records: writing them would take its host's CPU from
    // the pairs measuring, most of all where ranks share few cores.
    CCSCOPE_RETURN_IF_ERROR(c.barrier(fmt::format("{}/written/{}", key, r),
                                      Deadline::afterSeconds(2 * settings.timeout_s)));
  }
  return Status::ok();
}

PairsPhase::PairsPhase(const PairsOptions& o, launch::StoreClient& c, transports::Transport& t,
                       const transports::MemoryRegion& buf, reports::JsonLinesWriter* json,
                       std::string key)
    : o_(o), c_(c), t_(t), buf_(buf), json_(json), key_(std::move(key)) {}

PairsPhase::~PairsPhase() = default;

Status PairsPhase::run(const std::vector<std::string>& hosts) {
  std::vector<Round> plan = burnin::planRounds(o_.scope, hosts, o_.rounds_k, o_.seed);
  if (root()) {
    book_ = std::make_unique<PairsBook>();
    book_->start(o_, hosts, plan);
    json head = book_->runRecord(o_, plan);
    if (json_) json_->write(head);
    printHeader(head);
  }
  CCSCOPE_RETURN_IF_ERROR(rounds(plan, false));
  return retestSuspects();
}

Status PairsPhase::rounds(const std::vector<Round>& plan, bool retest) {
  return runPairRounds(c_, t_, buf_, plan, o_.pair, key_, round_no_,
                       [&](int r, const Pair& p, const json& figures) {
                         json rec = book_->add(r, retest, p, figures);
                         if (json_) json_->write(rec);
                         printPairRow(rec);
                         return Status::ok();
                       });
}

// Rank 0 judges the matrix, picks the suspects' retests (with healthy controls) and publishes
// them; every rank runs them three times: one more stall in a single retest would confirm what a
// stall made. Retests stay out of the matrix, so one pass is all there is.
Status PairsPhase::retestSuspects() {
  const std::string key = key_ + "/retest";
  if (root()) {
    std::vector<Pair> pairs = o_.retest ? book_->retestPairs(o_) : std::vector<Pair>{};
    json plan = json::array();
    for (const Round& r : burnin::packRounds(pairs)) plan.push_back(r);
    CCSCOPE_RETURN_IF_ERROR(c_.put(key, plan.dump()));
    if (!pairs.empty())
      std::printf("# retesting suspects %d times: %zu pair(s), healthy controls among them\n",
                  kRetestRepeats, pairs.size());
  }
  CCSCOPE_ASSIGN_OR_RETURN(std::string text,
                           c_.get(key, Deadline::afterSeconds(2 * o_.pair.timeout_s)));
  const json plan = json::parse(text, nullptr, false);
  if (!plan.is_array()) return Status(Code::kInternal, "pairs: rank 0 published no retest plan");
  for (int rep = 0; rep < kRetestRepeats && !plan.empty(); ++rep)
    CCSCOPE_RETURN_IF_ERROR(rounds(plan.get<std::vector<Round>>(), true));
  return Status::ok();
}

json PairsPhase::finish() const { return book_->finish(o_, json_); }

namespace {

class PairsRank {
 public:
  PairsRank(const PairsOptions& o, const launch::LaunchInfo& info) : o_(o), info_(info) {}
  int run();

 private:
  Status setUp();
  int fail(const Status& s);
  bool root() const { return info_.rank == 0; }

  PairsOptions o_;  // a copy: setUp says whether p99 is judged
  launch::LaunchInfo info_;
  Rendezvous rv_;
  std::vector<std::string> hosts_;
  std::unique_ptr<transports::Transport> t_;
  std::vector<char> mem_;
  transports::Registration reg_;
  std::unique_ptr<reports::JsonLinesWriter> json_;
};

Status PairsRank::setUp() {
  CCSCOPE_RETURN_IF_ERROR(joinRendezvous(info_, o_.store_bind, o_.pair.timeout_s, rv_));
  CCSCOPE_ASSIGN_OR_RETURN(GatheredHosts gathered, gatherHosts(*rv_.client, o_.pair.timeout_s));
  hosts_ = gathered.labels;
  o_.latency_unjudged = latencyUnjudged(gathered.crowded.ranks, gathered.crowded.cpus);
  auto t = transports::makeTransport(
      o_.transport,
      jobTransportOptions(info_, *rv_.client, o_.ifname, 1, gathered.most_on_one_machine, 0));
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

int PairsRank::fail(const Status& s) {
  return reportFailure(s, jobFailureContext(info_.rank, info_.local_rank, info_.local_size,
                                            rv_.client.get(), hosts_, json_.get(), o_.json_path));
}

int PairsRank::run() {
  if (Status s = setUp(); !s.isOk()) return fail(s);
  PairsPhase phase(o_, *rv_.client, *t_, reg_.region(), json_.get());
  if (Status s = phase.run(hosts_); !s.isOk()) return fail(s);
  int code = kExitOk;
  if (root()) code = pairsVerdictCount(phase.finish()) > 0 ? kExitFailed : kExitOk;
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
