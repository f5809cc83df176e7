// Runs a test body as N real rank processes for the transport conformance suite. The test
// process hosts the rendezvous store and forks one child per rank; each child joins the store,
// builds and connects the transport, runs the body and _exit()s with its verdict (it never
// returns into gtest). The parent reaps the children under a deadline, kills stragglers, and
// reports every rank that failed together with what that rank wrote to stderr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/deadline.h"
#include "launch/store_client.h"
#include "transports/transport.h"

namespace ccscope::transports::conformance {

struct RankContext {
  int rank = 0;
  int size = 1;
  Transport& transport;
  launch::StoreClient& store;
  core::Deadline deadline;  // the whole body's budget
};

// Returns 0 on success; on failure writes why to stderr (see RANK_CHECK) and returns non-zero.
using RankBody = std::function<int(RankContext&)>;

struct RankRunOptions {
  int np = 2;
  std::string transport;
  TransportOptions options;
  double timeout_s = 60;      // the parent kills every rank still running after this
  int killed_rank = -1;       // this rank is expected to die by SIGKILL
  bool final_barrier = true;  // ranks wait for each other before tearing the transport down
  // Builds the transport in each rank (after fork); unset: makeTransport(transport, options).
  std::function<core::Result<std::unique_ptr<Transport>>(const TransportOptions&)> make;
};

// np ranks of `transport`, all on this host (local_ranks = np), killed after timeout_s.
RankRunOptions localRanks(const std::string& transport, int np, double timeout_s = 60);

// "" when every rank ended as expected; otherwise one paragraph per rank that did not.
std::string runRanks(const RankRunOptions& opts, const RankBody& body);

// Verifiable data: byte i of stream `seed` is a hash of (seed, i), so a shifted, truncated or
// misrouted buffer is caught, not just a wrong first byte.
void fillPattern(char* buf, size_t len, uint64_t seed);
// Index of the first wrong byte, or -1 when all `len` bytes match.
int64_t firstMismatch(const char* buf, size_t len, uint64_t seed);

// Writes "rank R: file:line: message" to stderr (captured by the parent).
void rankFailure(int rank, const char* file, int line, const std::string& message);

}  // namespace ccscope::transports::conformance

// In a rank body: on failure, report and end the body with exit code 1.
#define RANK_CHECK(ctx, cond, message)                                                        \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      ::ccscope::transports::conformance::rankFailure((ctx).rank, __FILE__, __LINE__,         \
                                                      std::string(#cond) + ": " + (message)); \
      return 1;                                                                               \
    }                                                                                         \
  } while (0)
