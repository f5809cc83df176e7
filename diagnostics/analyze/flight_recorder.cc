#include "diagnostics/analyze/flight_recorder.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "diagnostics/analyze/pickle_reader.h"

namespace ccscope::diagnostics {
namespace {

using nlohmann::json;

long intField(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return -1;
  const auto& v = j[key];
  if (v.is_number_integer()) return v.get<long>();
  if (v.is_string()) {
    try {
      return std::stol(v.get<std::string>());
    } catch (...) {
      return -1;
    }
  }
  return -1;
}

std::string stringField(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

void readPgStatus(const json& doc, int rank, const std::string& file, ProgressTracker& tracker) {
  if (!doc.contains("pg_status") || !doc["pg_status"].is_object()) return;
  const auto& status = doc["pg_status"];
  // The default process group ("0") is the one every rank is in.
  const json* pg = status.contains("0") ? &status["0"] : nullptr;
  if (pg == nullptr && !status.empty()) pg = &status.begin().value();
  if (pg == nullptr) return;
  const long enq = intField(*pg, "last_enqueued_collective");
  const long done = intField(*pg, "last_completed_collective");
  if (enq < 0 && done < 0) return;
  tracker.recordEnqueued(rank, enq, done,
                         {file, 1,
                          fmt::format("pg_status: last_enqueued_collective={} "
                                      "last_completed_collective={}",
                                      enq, done)});
}

// True when `doc` is a Flight Recorder dump (it was then fed to `tracker`).
bool feedDump(const json& doc, int rank_hint, const std::string& file, ProgressTracker& tracker) {
  if (!doc.is_object() || !doc.contains("entries") || !doc["entries"].is_array()) return false;
  int rank = rank_hint;
  if (intField(doc, "rank") >= 0) rank = static_cast<int>(intField(doc, "rank"));
  if (rank < 0) return true;  // a dump, but no way to tell whose
  readPgStatus(doc, rank, file, tracker);
  long max_seq = -1, max_done = -1;
  for (const auto& e : doc["entries"]) {
    if (!e.is_object() ||
        (e.contains("is_p2p") && e["is_p2p"].is_boolean() && e["is_p2p"].get<bool>())) {
      continue;
    }
    const long seq = intField(e, "collective_seq_id");
    const std::string op = stringField(e, "profiling_name");
    std::string pg = stringField(e, "pg_id");
    if (pg.empty() && intField(e, "pg_id") >= 0) pg = std::to_string(intField(e, "pg_id"));
    tracker.recordOp(
        rank, pg, seq, op,
        {file, 1, fmt::format("entry collective_seq_id={} profiling_name={}", seq, op)});
    if (pg == "0" || pg.empty()) {
      max_seq = std::max(max_seq, seq);
      if (stringField(e, "state") == "completed") max_done = std::max(max_done, seq);
    }
  }
  if (!doc.contains("pg_status") && max_seq >= 0) {
    tracker.recordEnqueued(rank, max_seq, max_done,
                           {file, 1, fmt::format("last recorded collective_seq_id={}", max_seq)});
  }
  return true;
}

// The whole file, when it is no larger than the largest dump read.
core::Result<std::string> readSmallFile(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string data, chunk(size_t{1} << 16, '\0');
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    data.append(chunk.data(), static_cast<size_t>(in.gcount()));
    if (data.size() > max_bytes) {
      return core::Status(core::Code::kInvalidArgument,
                          fmt::format("larger than the {} MiB read", max_bytes >> 20));
    }
  }
  if (in.bad()) return core::Status(core::Code::kSystem, "read error");
  return data;
}

}  // namespace

bool parseFlightRecorderDump(std::string_view text, int rank_hint, const std::string& file,
                             ProgressTracker& tracker) {
  const json doc = json::parse(text.begin(), text.end(), nullptr, false);
  return !doc.is_discarded() && feedDump(doc, rank_hint, file, tracker);
}

bool feedFlightRecorderDump(const json& doc, int rank_hint, const std::string& file,
                            ProgressTracker& tracker) {
  return feedDump(doc, rank_hint, file, tracker);
}

bool readPickledFlightRecorder(const std::string& path, int rank_hint, ProgressTracker& tracker,
                               std::string& note) {
  char head[2] = {};
  if (path == "-" || !std::ifstream(path, std::ios::binary).read(head, 2) ||
      !looksLikePickle(std::string_view(head, 2))) {
    return false;
  }
  auto data = readSmallFile(path, kMaxJsonDocumentBytes);
  if (!data.isOk()) {
    note = fmt::format("{}: a pickle, not read: {}", path, data.status().message());
    return true;
  }
  auto decoded = decodePickle(*data);
  if (!decoded.isOk()) {  // a dump whose paths were edited after it was written, perhaps
    PickleOptions repair;
    repair.repair_string_lengths = true;
    size_t repaired_strings = 0;
    auto repaired = decodePickle(*data, repair, &repaired_strings);
    if (!repaired.isOk()) {
      note = fmt::format("{}: a pickle, not read: {}", path, decoded.status().message());
      return true;
    }
    note = fmt::format(
        "{}: read after repairing {} str(s) whose length prefix disagreed with their text "
        "(was the dump edited?)",
        path, repaired_strings);
    decoded = std::move(repaired);
  }
  if (!feedDump(*decoded, rank_hint, path, tracker))
    note = fmt::format("{}: a pickle, but not a Flight Recorder dump: skipped", path);
  return true;
}

}  // namespace ccscope::diagnostics
