// The Analyzer's reading of what `ccscope hang` collects: NCCL RAS reports (their sections,
// the ranks they list as missing or dead, the operation counts) and whole hang snapshots.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "diagnostics/analyze/analyzer.h"
#include "diagnostics/analyze/flight_recorder.h"
#include "diagnostics/analyze/line_reader.h"
#include "diagnostics/analyze/ras_report.h"

namespace ccscope::diagnostics {

const FindingSpec& rasRankMissingSpec() {
  static const FindingSpec spec{
      "application.ras-rank-missing",
      core::Layer::kApplication,
      reports::FindingKind::kRoot,
      70,
      "NCCL RAS got no data from a rank of a communicator",
      "Look at that rank's process on its node (ccscope hang there, or py-spy dump --pid PID): "
      "a process stuck outside NCCL answers nothing; a dead one is named under DEAD."};
  return spec;
}

const FindingSpec& rasRankDeadSpec() {
  static const FindingSpec spec{
      "host-network.ras-rank-dead",
      core::Layer::kHostNetwork,
      reports::FindingKind::kRoot,
      70,
      "NCCL RAS considers a rank's process dead",
      "On that rank's node: is the process alive (ps -p PID), did the OOM killer or a signal end "
      "it (dmesg, its log), is the host reachable from the others (ping, nc -zv)?"};
  return spec;
}

// What a line of an NCCL RAS report means, by the trigger that woke it (RasLine).
void Analyzer::feedRasLine(int kind, std::string_view body, long line_number,
                           std::vector<Event>& derived) {
  switch (static_cast<RasLine>(kind)) {
    case RasLine::kDead:
      file_->ras_dead = true;
      return;
    case RasLine::kIncomplete:
    case RasLine::kMismatch: {
      // A section header ("#0-0 (c987...) INCOMPLETE"): what the rank lines under it mean.
      const std::string_view trimmed =
          body.substr(std::min(body.find_first_not_of(' '), body.size()));
      if (!trimmed.empty() && (trimmed.front() == '#' || trimmed == "INCOMPLETE")) {
        const bool incomplete = static_cast<RasLine>(kind) == RasLine::kIncomplete &&
                                body.find("MISMATCH") == std::string_view::npos;
        file_->ras_section = incomplete ? "INCOMPLETE" : "MISMATCH";
      }
      return;
    }
    case RasLine::kManaged:
      if (file_->ras_section == "INCOMPLETE" && body.find(" launched ") == std::string_view::npos)
        missingRasRank(body, line_number, derived);
      return;
    case RasLine::kCounts: {
      // "Communicator ranks have different AllReduce operation counts": the rank lines under it
      // count that collective.
      const size_t at = body.find("different ");
      const size_t end = body.find(" operation counts");
      if (at != std::string_view::npos && end > at + 10)
        file_->ras_op = std::string(body.substr(at + 10, std::min<size_t>(end - at - 10, 40)));
      return;
    }
    case RasLine::kOperation: {
      std::string node;
      long count = -1;
      const int r =
          progress_.parseRasOperationLine(body, evidenceAt(body, line_number), &node, &count);
      if (r >= 0 && !node.empty()) acc_.learnHost(r, node);
      if (r >= 0 && count > 0 && !file_->ras_op.empty() && file_->ras_op != "collective")
        progress_.recordOp(r, "ras", count, file_->ras_op, evidenceAt(body, line_number));
      if (r >= 0) progress_.noteRankSeen(r);
      return;
    }
  }
}

// "  Rank 1 -- GPU 0 managed by process 581 on node 192.0.2.2" under INCOMPLETE: RAS got
// nothing from that rank.
void Analyzer::missingRasRank(std::string_view body, long line_number,
                              std::vector<Event>& derived) {
  const size_t at = body.find("Rank ");
  if (at == std::string_view::npos) return;
  int r = 0, digits = 0;
  for (size_t i = at + 5;
       i < body.size() && digits < 7 && std::isdigit(static_cast<unsigned char>(body[i]));
       ++i, ++digits)
    r = r * 10 + (body[i] - '0');
  if (digits == 0) return;
  Event e;
  e.spec = file_->ras_dead ? &rasRankDeadSpec() : &rasRankMissingSpec();
  e.rank = r;
  e.verdict = file_->ras_dead
                  ? fmt::format(
                        "rank {} is missing from its communicator and NCCL RAS considers "
                        "a process of the job dead: it exited, or its host is unreachable",
                        r)
                  : fmt::format(
                        "rank {} sent NCCL RAS no communicator data: its process is hung "
                        "outside NCCL, or gone",
                        r);
  e.evidence.push_back(evidenceAt(body, line_number));
  derived.push_back(std::move(e));
}

void Analyzer::feedText(const std::string& name, const std::string& text, int rank,
                        const std::string& host) {
  beginFile(name);
  if (rank >= 0) file_->default_rank = rank;
  file_->host = host;
  long n = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    feedLine(std::string_view(text).substr(start, std::min<size_t>(end - start, kMaxLineBytes)),
             ++n);
    start = end + 1;
  }
  endFile();
}

void Analyzer::analyzeSnapshot(const HangSnapshot& s, const std::string& name) {
  if (!s.ras_text.empty()) {
    feedText(name + "#ras", s.ras_text, -1, "");
  } else if (!s.ras_json.empty()) {
    const auto doc = nlohmann::json::parse(s.ras_json, nullptr, false);
    if (!doc.is_discarded()) feedText(name + "#ras", rasJsonAsText(doc), -1, "");
  }
  if (!s.kernel_log.empty()) {
    std::string text;
    for (const auto& l : s.kernel_log) text += l + "\n";
    feedText(name + "#kernel-log", text, -1, s.node);
  }
  hang_.addRdmaDevices(s.rdma_devices.size());
  for (const auto& p : s.processes) {
    const std::string file = fmt::format("{}#rank {}", name, p.rank);
    if (p.rank >= 0) {
      progress_.noteRankSeen(p.rank);
      if (!s.node.empty()) acc_.learnHost(p.rank, s.node);
    }
    if (!p.fr_dump.empty())
      parseFlightRecorderDump(p.fr_dump, p.rank, file + " flight-recorder", progress_);
    hang_.addProcess(s.node, p, file);
  }
  for (const auto& src : s.sources) {
    if (src.status != "read")
      note(fmt::format("{}: {} {}: {}", name, src.name, src.status, src.detail));
  }
  ++files_;
}

// A JSON document that is a hang snapshot (read whole); false for anything else.
bool Analyzer::readSnapshotFile(const std::string& path, core::Status& status) {
  if (path == "-") return false;
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c) && std::isspace(static_cast<unsigned char>(c))) {
  }
  if (!in || c != '{') return false;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<size_t>(std::max<std::streamoff>(in.tellg(), 0));
  if (size > kMaxJsonDocumentBytes) return false;
  in.seekg(0);
  std::string text(size, '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  const auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !isHangSnapshot(doc)) return false;
  auto snap = hangSnapshotFromJson(doc);
  if (!snap.isOk()) {
    status = core::Status(core::Code::kInvalidArgument, path + ": " + snap.status().message());
    return true;
  }
  analyzeSnapshot(*snap, path);
  return true;
}

}  // namespace ccscope::diagnostics
