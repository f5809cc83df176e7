#include "diagnostics/live/flight_dump.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "launch/host_identity.h"

namespace ccscope::diagnostics {

using nlohmann::json;

namespace {

const char* stateName(core::FlightState s) {
  switch (s) {
    case core::FlightState::kEmpty:
      return "empty";
    case core::FlightState::kRunning:
      return "running";
    case core::FlightState::kDone:
      return "done";
    case core::FlightState::kFailed:
      return "failed";
  }
  return "?";
}

json entryJson(const core::FlightEntry& e, int64_t now) {
  auto ld = [](const auto& a) { return a.load(std::memory_order_relaxed); };
  int64_t start = ld(e.start_ns), end = ld(e.end_ns);
  json j{{"seq", ld(e.seq)},
         {"op", ld(e.collective)},
         {"algo", ld(e.algorithm)},
         {"dtype", ld(e.dtype)},
         {"bytes", ld(e.bytes)},
         {"state", stateName(ld(e.state))},
         {"step", ld(e.step)},
         {"steps", ld(e.steps)},
         {"peer", ld(e.waiting_peer)},
         {"expected", ld(e.peer_expected)},
         {"moved", ld(e.peer_moved)},
         {"age_ms", (now - start) / 1000000},
         {"duration_us", end ? (end - start) / 1000 : -1},
         {"idle_ms", (now - ld(e.last_progress_ns)) / 1000000}};
  if (int peer = ld(e.stuck_send_peer); peer >= 0) {
    j["send_peer"] = peer;
    j["send_expected"] = ld(e.stuck_send_expected);
    j["send_moved"] = ld(e.stuck_send_moved);
  }
  return j;
}

}  // namespace

json flightDump(const core::FlightRecorder& rec, int rank, const std::string& host) {
  int64_t now = core::nowNs();
  json entries = json::array();
  uint64_t last = rec.latestSeq();
  uint64_t first =
      last > core::FlightRecorder::kEntries ? last - core::FlightRecorder::kEntries + 1 : 1;
  for (uint64_t s = first; s <= last; ++s) {
    const core::FlightEntry& e = rec.entry(s);
    if (e.seq.load(std::memory_order_acquire) == s) entries.push_back(entryJson(e, now));
  }
  return json{{"type", "flight_recorder"},
              {"rank", rank},
              {"host", host},
              {"host_key", launch::localHostIdentity().key},
              {"pid", static_cast<int>(getpid())},
              {"entries", entries}};
}

std::string flightSnapshot(const core::FlightRecorder& rec) {
  uint64_t last = rec.latestSeq();
  if (last == 0) return "";
  return entryJson(rec.entry(last), core::nowNs()).dump();
}

Snapshot parseSnapshot(const std::string& text) {
  Snapshot s;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return s;
  auto get = [&](const char* k, auto def) {
    return j.contains(k) ? j[k].get<decltype(def)>() : def;
  };
  try {
    s.seq = get("seq", uint64_t{0});
    s.op = get("op", std::string());
    s.algo = get("algo", std::string());
    s.dtype = get("dtype", std::string());
    s.state = get("state", std::string());
    s.bytes = get("bytes", uint64_t{0});
    s.step = get("step", uint32_t{0});
    s.steps = get("steps", uint32_t{0});
    s.peer = get("peer", -1);
    s.expected = get("expected", uint64_t{0});
    s.moved = get("moved", uint64_t{0});
    s.idle_ms = get("idle_ms", int64_t{0});
    s.send_peer = get("send_peer", -1);
    s.send_expected = get("send_expected", uint64_t{0});
    s.send_moved = get("send_moved", uint64_t{0});
    s.valid = true;
  } catch (const json::exception&) {
    s.valid = false;
  }
  return s;
}

std::string writeFlightDump(const core::FlightRecorder& rec, int rank, const std::string& host) {
  const char* dir = std::getenv("CCSCOPE_DUMP_DIR");
  std::string path = fmt::format("{}/ccscope-flight-r{}-{}.json", dir && *dir ? dir : "/tmp", rank,
                                 static_cast<int>(getpid()));
  std::ofstream out(path);
  if (!out) return "";
  out << flightDump(rec, rank, host).dump(1) << "\n";
  return out ? path : "";
}

}  // namespace ccscope::diagnostics
