// The one point-to-point interface every collective runs over (docs/architecture.md,
// "Transport contract").
//
// Semantics: messages between two ranks are matched in the order they were posted (per peer,
// FIFO); the tag of a matched pair must agree, else both sides fail with an application-layer
// error. A receive must be at least as long as the matching send. Posting never blocks; the
// caller drives progress through test/wait. Waiting spins briefly, then blocks in the kernel
// (epoll, futex), because ranks may outnumber cores.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/deadline.h"
#include "core/status.h"
#include "launch/bootstrap.h"
#include "transports/common/request_table.h"

namespace ccscope::transports {

struct MemoryRegion {
  char* base = nullptr;
  size_t len = 0;
  uint32_t id = 0;
};

struct Capabilities {
  bool device_memory = false;
  bool one_sided_write = false;
  bool single_copy = false;
  // Pipeline segments smaller than this cost more in per-message overhead than they win in
  // overlap (docs/performance.md, "Allreduce ring vs Open MPI").
  size_t min_segment_bytes = size_t{64} * 1024;
};

struct TransportOptions {
  int local_ranks = 1;          // ranks on this host (for the spin policy)
  int streams = 1;              // tcp: connections per peer
  std::string ifname;           // tcp: interface to listen on ("" = the one reaching the store)
  std::string listen_host;      // tcp: explicit address to listen on
  size_t single_copy_from = 0;  // shm: messages from this size by single copy (0: its default)
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  virtual Capabilities caps() const = 0;

  // Connects to every other rank (addresses exchanged through the bootstrap).
  virtual core::Status connect(launch::Bootstrap& bootstrap, core::Deadline deadline) = 0;
  virtual core::Result<MemoryRegion> registerMemory(void* base, size_t len) = 0;
  virtual core::Result<Request> postSend(int peer, uint32_t tag, const MemoryRegion& mr,
                                         size_t offset, size_t len) = 0;
  virtual core::Result<Request> postRecv(int peer, uint32_t tag, const MemoryRegion& mr,
                                         size_t offset, size_t len) = 0;
  // Advances every outstanding request without blocking.
  virtual core::Status progress() = 0;
  virtual void close() = 0;

  // True once the request finished (done or failed); the request stays valid until wait().
  bool test(Request r);
  // Waits for one request and releases it; on a deadline the error says who waited for whom.
  core::Status wait(Request r, core::Deadline deadline);
  // Waits until at least one of `reqs` finished (or the deadline); does not release.
  core::Status waitAny(std::span<const Request> reqs, core::Deadline deadline);

  RequestTable& requests() { return *table_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // More local ranks than cores: every extra message costs a context switch.
  bool oversubscribed() const { return yield_in_spin_; }

 protected:
  void initTable(int rank, int size, uint32_t capacity = RequestTable::kDefaultCapacity);
  // Sleeps until there may be activity, at most max_ns. Transports use epoll or futexes.
  virtual void blockFor(int64_t max_ns) = 0;
  void setSpinPolicy(int local_ranks);

  std::unique_ptr<RequestTable> table_;
  int rank_ = 0;
  int size_ = 1;
  int64_t spin_ns_ = 20000;
  bool yield_in_spin_ = false;
};

// Factory for the transports compiled in (the table in transport_factory.cc).
core::Result<std::unique_ptr<Transport>> makeTransport(const std::string& name,
                                                       const TransportOptions& opts);
bool isTransport(const std::string& name);
std::string transportNames();  // "shm, tcp"

}  // namespace ccscope::transports
