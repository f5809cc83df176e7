#include "app/failure_report.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <regex>
#include <thread>

#include "app/command.h"
#include "app/run_metadata.h"
#ifdef CCSCOPE_HAVE_ANALYZE
#include "diagnostics/analyze/nccl_debug_log.h"
#endif
#include "diagnostics/live/flight_dump.h"
#include "diagnostics/live/hang_diagnosis.h"
#include "launch/socket_util.h"

namespace ccscope::app {

using core::Code;
using core::Layer;
using core::Status;

namespace {

constexpr double kSettleSeconds = 3;  // for a stopped rank's heartbeats to go stale
constexpr int kProbePort = 9;         // any port: a refusal proves the host answers
constexpr double kProbeSeconds = 1.5;

// The store's table, once it shows a rank gone or frozen (or after the settle time).
core::Result<std::vector<launch::RankHealth>> settledTable(launch::StoreClient& c) {
  core::Deadline settle = core::Deadline::afterSeconds(kSettleSeconds);
  while (true) {
    auto t = c.health(core::Deadline::afterSeconds(2));
    if (!t) return t;
    for (const auto& h : *t)
      if (h.rank != c.rank() &&
          (h.state == launch::RankState::kGone || h.state == launch::RankState::kFrozen))
        return t;
    if (settle.expired()) return t;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

FailureContext jobFailureContext(int rank, int local_rank, int local_size,
                                 launch::StoreClient* client, const std::vector<std::string>& hosts,
                                 reports::JsonLinesWriter* json, const std::string& json_path) {
  FailureContext ctx;
  ctx.rank = rank;
  ctx.client = client;
  ctx.json = json;
  ctx.json_path = rank == 0 ? json_path : "";
  ctx.hosts = hosts;
  ctx.host = hosts.empty() ? "" : hosts[rank];
  ctx.local_rank = local_rank;
  ctx.local_size = local_size;
  return ctx;
}

int exitCodeFor(const Status& s) {
  switch (s.code()) {
    case Code::kInvalidArgument:
    case Code::kUnsupported:
      return kExitUsage;
    case Code::kUnavailable:
      return s.layer() == Layer::kBootstrap ? kExitHang : kExitMissing;
    case Code::kDeadlineExceeded:
    case Code::kPeerClosed:
    case Code::kRemoteError:
    case Code::kAborted:
      return kExitHang;
    case Code::kWrongResults:
      return kExitWrongResults;
    default:
      return kExitFailed;
  }
}

// Before the rendezvous completed there is no store to ask: the status itself says who is
// missing ("... in time: 2 (not-joined), 3 (gone)") or that this rank could not reach it.
reports::Diagnosis bootstrapDiagnosis(const Status& s, const FailureContext& ctx) {
  reports::Diagnosis d;
  d.layer = Layer::kBootstrap;
  d.conclusive = true;
  d.confidence = "high";
  d.verdict = s.message();
  d.next_step =
      "Check that every rank was started, that the rendezvous address and port are right "
      "and free, and that no firewall rejects it.";
  // Something else answers on the rendezvous port: rank 0's store never started there.
  if (s.peer() == 0) {
    d.culprit.ranks.push_back(0);
    if (!ctx.store_host.empty()) d.culprit.hosts.push_back(ctx.store_host);
    d.evidence.push_back({"", 0, fmt::format("rank {}: {}", ctx.rank, s.toString())});
    return d;
  }
  static const std::regex kMissing(R"((\d+) \((not-joined|gone|frozen)\))");
  for (std::sregex_iterator it(s.message().begin(), s.message().end(), kMissing), end; it != end;
       ++it)
    d.culprit.ranks.push_back(std::stoi((*it)[1]));
  if (d.culprit.ranks.empty()) {  // this rank could not join: nor can the others on its host
    int first = ctx.local_size > 0 ? ctx.rank - ctx.local_rank : ctx.rank;
    for (int r = first; r < first + std::max(1, ctx.local_size); ++r) d.culprit.ranks.push_back(r);
    d.culprit.hosts.push_back(ctx.host);
  }
  d.evidence.push_back({"", 0, fmt::format("rank {}: {}", ctx.rank, s.toString())});
  return d;
}

// Rank 0's JSON Lines file for diagnosis records: the run's, or `own` opened once (a second
// open would truncate the first record).
reports::JsonLinesWriter* diagnosisSink(const FailureContext& ctx,
                                        std::unique_ptr<reports::JsonLinesWriter>& own) {
  if (ctx.json) return ctx.json;
  if (!own && ctx.rank == 0 && !ctx.json_path.empty()) {
    auto w = reports::JsonLinesWriter::open(ctx.json_path);
    if (w) own = std::move(w.value());
  }
  return own.get();
}

// `nccl_log`: the diagnosis is the analyzer's on that NCCL log, not the live one.
void emit(const reports::Diagnosis& d, const FailureContext& ctx,
          std::unique_ptr<reports::JsonLinesWriter>& own, const std::string& nccl_log = "") {
  std::string text = diagnostics::renderDiagnosis(d);
  if (nccl_log.empty())
    std::fprintf(stderr, "ccscope: rank %d: diagnosis: %s", ctx.rank, text.c_str());
  else
    std::fprintf(stderr, "ccscope: rank %d: diagnosis from NCCL's log %s: %s", ctx.rank,
                 nccl_log.c_str(), text.c_str());
  reports::JsonLinesWriter* out = diagnosisSink(ctx, own);
  if (!out) return;
  nlohmann::json rec = reports::toJson(d);
  rec["type"] = "diagnosis";
  rec["reported_by"] = ctx.rank;
  rec["source"] = nccl_log.empty() ? "live" : "nccl_log";
  if (!nccl_log.empty()) rec["log"] = nccl_log;
  out->write(rec);
}

// NCCL's own account of the failure, from the log this rank routed NCCL_DEBUG to.
void emitNcclLogDiagnosis(const FailureContext& ctx,
                          std::unique_ptr<reports::JsonLinesWriter>& own) {
#ifdef CCSCOPE_HAVE_ANALYZE
  std::error_code ec;
  if (ctx.nccl_log.empty() || std::filesystem::file_size(ctx.nccl_log, ec) == 0 || ec)
    return;  // NCCL never started (no GPU, an error before its first call)
  if (auto d = diagnostics::diagnoseNcclLog(ctx.nccl_log))
    emit(*d, ctx, own, ctx.nccl_log);
  else
    std::fprintf(stderr, "ccscope: rank %d: NCCL's log %s: nothing conclusive in it\n", ctx.rank,
                 ctx.nccl_log.c_str());
#else
  (void)ctx;
  (void)own;
#endif
}

int reportFailure(const Status& s, const FailureContext& ctx) {
  std::fprintf(stderr, "ccscope: rank %d: %s\n", ctx.rank, s.toString().c_str());
  int code = exitCodeFor(s);
  std::unique_ptr<reports::JsonLinesWriter> own;
  if (code == kExitHang && (!ctx.client || s.layer() == Layer::kBootstrap)) {
    emit(bootstrapDiagnosis(s, ctx), ctx, own);
    emitNcclLogDiagnosis(ctx, own);
    return code;
  }
  if (code != kExitHang) {
    emitNcclLogDiagnosis(ctx, own);
    return code;
  }
  diagnostics::HangInputs in;
  in.self = ctx.rank;
  in.failure = s;
  in.self_host = ctx.host;
  in.store_host = ctx.client->storeAddress().host;
  in.hosts = ctx.hosts;
  auto table = settledTable(*ctx.client);
  if (table)
    in.table = std::move(*table);
  else
    in.store_error = table.status().message();
  in.reachable = [](const std::string& addr) {
    return launch::tcpReachable(addr, kProbePort, core::Deadline::afterSeconds(kProbeSeconds));
  };
  emit(diagnostics::diagnoseHang(in), ctx, own);
  emitNcclLogDiagnosis(ctx, own);
  if (ctx.recorder) {
    std::string path = diagnostics::writeFlightDump(*ctx.recorder, ctx.rank, ctx.host);
    if (!path.empty())
      std::fprintf(stderr, "ccscope: rank %d: flight recorder dumped to %s\n", ctx.rank,
                   path.c_str());
  }
  return code;
}

void reportNcclLogsOfJob(const std::vector<int>& rank_pids, std::time_t started) {
#ifdef CCSCOPE_HAVE_ANALYZE
  const std::string host = hostName();
  std::vector<std::string> logs;
  for (size_t r = 0; r < rank_pids.size(); ++r)
    logs.push_back(diagnostics::ncclDebugPath(static_cast<int>(r), rank_pids[r], host));
  size_t read = 0;
  if (auto d = diagnostics::diagnoseNcclLogs(logs, started, &read))
    std::fprintf(stderr,
                 "ccscope: diagnosis from the NCCL logs of %zu of %zu ranks, read together "
                 "(%s): %s",
                 read, logs.size(),
                 d->evidence.empty() ? logs.front().c_str() : d->evidence.front().file.c_str(),
                 diagnostics::renderDiagnosis(*d).c_str());
#else
  (void)rank_pids;
  (void)started;
#endif
}

}  // namespace ccscope::app
