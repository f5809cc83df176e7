// A client of NCCL's RAS service (NCCL >= 2.24, on by default): every NCCL process of a job
// listens on NCCL_RAS_ADDR (default 127.0.0.1:28028) and answers with a report aggregated over
// all nodes of the job. The client speaks its text protocol, asks for JSON where the server
// accepts it, and turns each way the exchange can fail into one clear line.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace ccscope::diagnostics {

inline constexpr int kRasDefaultPort = 28028;
inline constexpr int kRasClientProtocol = 2;

struct RasQuery {
  std::string host = "127.0.0.1";
  int port = kRasDefaultPort;
  double timeout_s = 5;  // the whole exchange, connection included
  bool json = true;      // ask for JSON (SET FORMAT json); text where the server refuses
  bool verbose = true;   // VERBOSE STATUS rather than STATUS
};

struct RasAnswer {
  int server_protocol = -1;
  std::string format;                   // "json" or "text"
  std::string text;                     // the report as sent (JSON: as repaired, when it had to be)
  std::vector<std::string> transcript;  // "> sent", "< received" lines of the handshake
  std::string note;                     // a fallback taken ("JSON refused: text")
};

// "HOST:PORT", "[V6]:PORT", "HOST" or ":PORT"; the default port where none is given.
core::Result<RasQuery> parseRasAddress(const std::string& s);

// Errors: kUnavailable (nothing listens: no NCCL process on that node, NCCL < 2.24, or
// NCCL_RAS_ENABLE=0), kDeadlineExceeded (no report in time), kPeerClosed (closed before the
// report), kUnsupported (a protocol this client does not speak), kInvalidArgument (bad address).
core::Result<RasAnswer> queryRas(const RasQuery& q);

}  // namespace ccscope::diagnostics
