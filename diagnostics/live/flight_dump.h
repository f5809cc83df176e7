// The flight recorder as JSON: full dumps (on a timeout, SIGUSR1, or a coordinator request) and
// the compact snapshot every heartbeat carries to the coordinator.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/flight_record.h"

namespace ccscope::diagnostics {

// {"type":"flight_recorder","rank","host","pid","entries":[...oldest first]}
nlohmann::json flightDump(const core::FlightRecorder& rec, int rank, const std::string& host);
// The newest operation, compact: {"seq","op","algo","bytes","state","step","steps","peer",
// "expected","moved","idle_ms"}, and after a failure with a send unfinished "send_peer",
// "send_expected", "send_moved"; "" before the first operation.
std::string flightSnapshot(const core::FlightRecorder& rec);

struct Snapshot {
  bool valid = false;
  uint64_t seq = 0;
  std::string op, algo, dtype, state;
  uint64_t bytes = 0;
  uint32_t step = 0, steps = 0;
  int peer = -1;
  uint64_t expected = 0, moved = 0;
  int64_t idle_ms = 0;
  int send_peer = -1;  // a send still unfinished when the operation failed
  uint64_t send_expected = 0, send_moved = 0;
};
Snapshot parseSnapshot(const std::string& text);

// Writes a dump to $CCSCOPE_DUMP_DIR (default /tmp) as ccscope-flight-r<rank>-<pid>.json and
// returns the path ("" on failure).
std::string writeFlightDump(const core::FlightRecorder& rec, int rank, const std::string& host);

}  // namespace ccscope::diagnostics
