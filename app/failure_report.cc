#include "app/failure_report.h"

#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "app/command.h"
#include "diagnostics/live/flight_dump.h"
#include "diagnostics/live/hang_diagnosis.h"
#include "launch/socket_util.h"

namespace ccscope::app {

using core::Code;
using core::Layer;
using core::Status;

namespace {

constexpr double kSettleSeconds = 3;     // for a stopped rank's heartbeats to go stale
constexpr int kProbePort = 9;            // any port: a refusal proves the host answers
constexpr double kProbeSeconds = 1.5;

// The store's table, once it shows a rank gone or frozen (or after the settle time).
core::Result<std::vector<launch::RankHealth>> settledTable(launch::StoreClient& c) {
  core::Deadline settle = core::Deadline::afterSeconds(kSettleSeconds);
  while (true) {
    auto t = c.health(core::Deadline::afterSeconds(2));
    if (!t) return t;
    for (const auto& h : *t)
      if (h.rank != c.rank() && (h.state == launch::RankState::kGone || h.state == launch::RankState::kFrozen))
        return t;
    if (settle.expired()) return t;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

int exitCodeFor(const Status& s) {
  switch (s.code()) {
    case Code::kInvalidArgument: case Code::kUnsupported: return kExitUsage;
    case Code::kUnavailable: return s.layer() == Layer::kBootstrap ? kExitHang : kExitMissing;
    case Code::kDeadlineExceeded: case Code::kPeerClosed: case Code::kRemoteError:
    case Code::kAborted: return kExitHang;
    case Code::kWrongResults: return kExitWrongResults;
    default: return kExitFailed;
  }
}

int reportFailure(const Status& s, const FailureContext& ctx) {
  std::fprintf(stderr, "ccscope: rank %d: %s\n", ctx.rank, s.toString().c_str());
  int code = exitCodeFor(s);
  if (code != kExitHang || !ctx.client) return code;
  diagnostics::HangInputs in;
  in.self = ctx.rank;
  in.failure = s;
  auto table = settledTable(*ctx.client);
  if (table) in.table = std::move(*table);
  else in.store_error = table.status().message();
  in.reachable = [](const std::string& addr) {
    return launch::tcpReachable(addr, kProbePort, core::Deadline::afterSeconds(kProbeSeconds));
  };
  reports::Diagnosis d = diagnostics::diagnoseHang(in);
  std::string text = diagnostics::renderDiagnosis(d);
  std::fprintf(stderr, "ccscope: rank %d: diagnosis: %s", ctx.rank, text.c_str());
  if (ctx.recorder) {
    std::string path = diagnostics::writeFlightDump(*ctx.recorder, ctx.rank, ctx.host);
    if (!path.empty()) std::fprintf(stderr, "ccscope: rank %d: flight recorder dumped to %s\n", ctx.rank, path.c_str());
  }
  if (ctx.json) {
    nlohmann::json rec = reports::toJson(d);
    rec["type"] = "diagnosis";
    rec["reported_by"] = ctx.rank;
    ctx.json->write(rec);
  }
  return code;
}

}  // namespace ccscope::app
