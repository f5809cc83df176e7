// The one point-to-point interface every collective runs over (docs/architecture.md,
// "Transport contract").
//
// The contract (matching, ordering, cancellation, memory kinds, batches, buffer ownership) is
// transports/README.md. In short: messages between two ranks match in the order they were
// posted (per peer, FIFO); the tags of a matched pair must agree, else both sides fail with an
// application-layer error; a receive must be at least as long as its send. Posting never
// blocks; the caller drives progress through test/wait. Waiting spins briefly, then blocks in
// the kernel (epoll, futex), because ranks may outnumber cores.
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
#include "transports/memory.h"

namespace ccscope::transports {

struct Capabilities {
  // Memory the transport moves; registerMemory refuses other kinds.
  MemoryKinds memory_kinds{MemoryKind::kHost};
  // Operations run in order on a device stream: the executor counts a dependency as met when
  // the operation is enqueued and waits once, at the end (transports/README.md, "Batches and
  // stream order").
  bool stream_ordered = false;
  // A pair whose tags disagree fails on both sides. Without it, a rank one collective ahead of
  // its peer shows only as wrong data: the harness says so above its table.
  bool verifies_tags = true;
  // The executor keeps at most this many requests in flight per peer and direction (fewer when
  // the request table is smaller: see Transport::inflightPerPeer).
  uint32_t max_inflight_per_peer = 64;
  // Pipeline segments smaller than this cost more in per-message overhead than they win in
  // overlap (docs/performance.md, "Allreduce ring vs Open MPI").
  size_t min_segment_bytes = size_t{64} * 1024;
};

struct TransportOptions {
  int local_ranks = 1;          // most ranks on one machine (spin policy, segment doubling)
  int streams = 1;              // tcp: connections per peer
  std::string ifname;           // tcp: interface to listen on ("" = the one reaching the store)
  std::string listen_host;      // tcp: explicit address to listen on
  size_t single_copy_from = 0;  // shm: messages from this size by single copy (0: its default)
  uint32_t request_slots = 0;   // size of the request table (0: RequestTable::kDefaultCapacity)
  // Prefix of this instance's bootstrap keys, so that two transports of one kind (the measured
  // one and the harness's own channel) connect side by side.
  std::string scope;
  std::string rdma_dev;  // verbs: "mlx5_0:1" or "mlx5_0" ("" = the first ACTIVE port)
  int gid_index = -1;    // verbs: GID table index (-1 = the first RoCE v2 GID, none on IB)
  // ucx: endpoints in peer error-handling mode (a failed peer fails its requests at once). Off,
  // UCX 1.13 may also use its zero-copy transports (cma, tcp's put), which lack that mode.
  bool ucx_peer_errors = true;
  // nccl: the rank's device stream (the compute backend's: cudaStream_t; nullptr: its own), and
  // the bound on enqueueing a group, which may wait on NCCL's lazy connection set-up (0: 300 s).
  void* cuda_stream = nullptr;
  double op_timeout_s = 0;
};

class Transport {
 public:
  Transport();
  virtual ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;
  virtual const char* name() const = 0;
  virtual Capabilities caps() const = 0;
  // "" or one line for the table above the figures: what the transport chose where it had a
  // choice (UCX's transports per peer).
  virtual std::string setupNote() const { return ""; }

  // Connects to every other rank (addresses exchanged through the bootstrap).
  virtual core::Status connect(launch::Bootstrap& bootstrap, core::Deadline deadline) = 0;
  // Registers [base, base + len) of memory of `kind` (on CUDA device `device`); the
  // registration deregisters when it goes. Registering may be slow (pinning, a device call):
  // never inside a timed loop.
  core::Result<Registration> registerMemory(void* base, size_t len,
                                            MemoryKind kind = MemoryKind::kHost, int device = -1);

  // Posts a message of `len` bytes at `offset` in `mr` (the range is checked against the region
  // here, for every transport). The buffer belongs to the transport until the request finished
  // and was released, or was cancelled.
  core::Result<Request> postSend(int peer, uint32_t tag, const MemoryRegion& mr, size_t offset,
                                 size_t len) {
    return post(Dir::kSend, peer, tag, mr, offset, len);
  }
  core::Result<Request> postRecv(int peer, uint32_t tag, const MemoryRegion& mr, size_t offset,
                                 size_t len) {
    return post(Dir::kRecv, peer, tag, mr, offset, len);
  }
  // The posts between these two form one batch (an NCCL group, a chain of work requests); a
  // transport without batches ignores them. Batches do not nest.
  virtual void beginBatch() {}
  virtual core::Status endBatch() { return core::Status::ok(); }
  // Advances every outstanding request without blocking.
  virtual core::Status progress() = 0;
  // Gives a request up; the handle is invalid afterwards and the buffer is the caller's again
  // on return: a cancelled receive never writes it. A receive that no message matched yet
  // stays in the matching order and swallows the next message from its peer if that carries
  // its tag (a late reply to a timed-out probe), else steps aside. A send that has not started
  // is withdrawn; one that has partly left cannot be taken back from the peer's stream, so its
  // peer is aborted (abortPeer). Cancelling a finished request only releases it.
  void cancel(Request r);
  // Ends every exchange with `peer`: its pending requests fail with `why` (they are still
  // released by wait or the finished list), later posts to it fail, the peer is told where the
  // transport can, and no buffer of those requests is touched after the call returns.
  virtual void abortPeer(int peer, const core::Status& why) = 0;
  // Ends every exchange. Requests still pending fail; every later call fails or does nothing.
  virtual void close() = 0;

  // True once the request finished (done or failed); the request stays valid until released.
  bool test(Request r);
  // Waits for one request and releases it; on a deadline the error says who waited for whom.
  core::Status wait(Request r, core::Deadline deadline);
  // As wait(), but a request that did not finish in time is cancelled: on return the buffer is
  // the caller's whatever happened.
  core::Status waitOrCancel(Request r, core::Deadline deadline);
  // Waits until at least one of `reqs` finished (or the deadline); does not release.
  core::Status waitAny(std::span<const Request> reqs, core::Deadline deadline);
  // Drives progress until `ready()` holds (spin, then block) or the deadline passes; the
  // timeout error then blames `blame` (the oldest request the caller waits on).
  template <class Ready>
  core::Status waitUntil(Ready&& ready, core::Deadline deadline, Request blame);

  // Requests in flight per peer and direction the executor allows itself: the capability,
  // bounded so that every peer's requests fit in the table at once.
  uint32_t inflightPerPeer() const;
  RequestTable& requests() { return *table_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool connected() const { return connected_; }
  // More local ranks than cores: every extra message costs a context switch.
  bool oversubscribed() const { return yield_in_spin_; }
  // Sleeps until this transport may have activity, at most max_ns: for a transport that
  // layers on another (cuda-ipc's shm control channel), whose sleep also checks peers' liveness.
  void sleepFor(int64_t max_ns) { blockFor(max_ns); }

 protected:
  void initTable(int rank, int size, uint32_t capacity = 0);
  // Sleeps until there may be activity, at most max_ns. Transports use epoll or futexes.
  virtual void blockFor(int64_t max_ns) = 0;
  // Registration of checked arguments; host-memory transports need no keys.
  virtual core::Result<MemoryKeys> doRegister(char* /*base*/, size_t /*len*/, MemoryKind /*kind*/,
                                              int /*device*/) {
    return MemoryKeys{};
  }
  virtual void doDeregister(const MemoryRegion& /*mr*/) {}
  // A post whose peer, range and memory kind were checked; `view` is exactly the message.
  virtual core::Result<Request> doPost(Dir dir, int peer, uint32_t tag,
                                       const MemoryRegion& view) = 0;
  // The transport's part of cancel(): the record is marked cancelled (buf nullptr) before this
  // is called; the transport drops it from its queues (RequestTable::drop) or keeps matching
  // and discarding, or aborts the peer.
  virtual void cancelPending(uint32_t slot) = 0;
  void setSpinPolicy(int local_ranks);
  void setConnected(bool c) { connected_ = c; }
  // Every check a post makes before the transport sees it.
  core::Status checkPost(int peer, const MemoryRegion& mr, size_t offset, size_t len) const;

  std::unique_ptr<RequestTable> table_;
  uint32_t request_slots_ = 0;  // from TransportOptions: 0 = the default
  int rank_ = 0;
  int size_ = 1;
  int64_t spin_ns_ = 20000;
  bool yield_in_spin_ = false;

 private:
  friend class Registration;
  core::Result<Request> post(Dir dir, int peer, uint32_t tag, const MemoryRegion& mr, size_t offset,
                             size_t len);
  // The clock is read once per kClockEvery polls: a clock read costs as much as a poll of an
  // idle shm ring, and the first polls are where small messages arrive.
  static constexpr uint32_t kClockEvery = 16;
  bool spinOrBlock(uint32_t polls, int64_t& spin_until, core::Deadline deadline);
  std::shared_ptr<Registration::Owner> owner_;
  uint32_t next_region_ = 1;
  bool connected_ = false;
};

struct Registration::Owner {
  Transport* transport;
};

template <class Ready>
core::Status Transport::waitUntil(Ready&& ready, core::Deadline deadline, Request blame) {
  if (ready()) return core::Status::ok();
  int64_t spin_until = 0;  // set at the first clock read
  for (uint32_t polls = 1;; ++polls) {
    CCSCOPE_RETURN_IF_ERROR(progress());
    if (ready()) return core::Status::ok();
    // Most polls only poll again: the clock is read every kClockEvery-th (spinOrBlock).
    if (!yield_in_spin_ && polls % kClockEvery != 0) continue;
    if (!spinOrBlock(polls, spin_until, deadline)) continue;
    if (!blame.valid()) return core::Status(core::Code::kDeadlineExceeded, "deadline passed");
    return table_->timeoutStatus(table_->at(blame));
  }
}

// Factory for the transports compiled in (the table in transport_factory.cc).
core::Result<std::unique_ptr<Transport>> makeTransport(const std::string& name,
                                                       const TransportOptions& opts);
bool isTransport(const std::string& name);
// Transports that move device memory only (cuda-ipc, nccl): they imply --device cuda, and what
// measures host buffers (pairs, burn-in) cannot use them.
bool movesDeviceMemoryOnly(const std::string& name);
// Whether this host can run `name` at all (a device it needs exists), asked once before ranks
// start: kUnavailable (exit 5) with the reason; OK for transports that need nothing.
core::Status transportUsable(const std::string& name);
// "shm, tcp, ...": every name --transport takes, or only those compiled into this binary.
std::string transportNames(bool built_only = false);

}  // namespace ccscope::transports
