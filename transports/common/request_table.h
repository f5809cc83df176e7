// The request table every transport shares: fixed-capacity slots (no allocation on the data
// path), readable ids ("r3->r4 tcp tag 0x12 #41"), timestamps, bytes moved, sticky per-peer
// errors, and the list of requests that finished, each reported once. Transports only move
// bytes and call the complete/progress/fail hooks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/deadline.h"
#include "core/status.h"

namespace ccscope::transports {

enum class Dir : uint8_t { kSend, kRecv };
enum class ReqState : uint8_t { kFree, kPending, kDone, kFailed };

struct Request {
  uint32_t slot = UINT32_MAX;
  uint32_t gen = 0;
  bool valid() const { return slot != UINT32_MAX; }
};

struct RequestRecord {
  ReqState state = ReqState::kFree;
  Dir dir = Dir::kSend;
  int peer = -1;
  uint32_t tag = 0;
  uint32_t gen = 0;
  uint64_t seq = 0;     // per-transport serial number, the "#41" in ids
  char* buf = nullptr;  // registered memory + offset; nullptr once cancelled (data discarded)
  size_t len = 0;
  size_t bytes = 0;         // moved so far
  uint32_t parts_left = 0;  // transports that split a message count parts here
  int64_t posted_ns = 0;
  int64_t last_progress_ns = 0;
  int64_t done_ns = 0;
  core::Status error;
  // Cancelled by its owner, who holds no handle any more: the transport may still match a
  // message against it (a receive discards it) and frees the slot when it finishes.
  bool cancelled = false;
  bool in_done_list = false;
  uint32_t next_done = UINT32_MAX;
};

class RequestTable {
 public:
  static constexpr uint32_t kDefaultCapacity = 1u << 14;
  RequestTable(int self_rank, int world_size, const char* transport_name,
               uint32_t capacity = kDefaultCapacity);

  // Allocates a pending record; fails with the peer's sticky error if the peer already failed.
  core::Result<Request> open(Dir dir, int peer, uint32_t tag, char* buf, size_t len);
  RequestRecord& at(Request r) {
    CCSCOPE_CHECK(r.slot < recs_.size() && recs_[r.slot].gen == r.gen, "stale request handle");
    return recs_[r.slot];
  }
  RequestRecord& slot(uint32_t i) { return recs_[i]; }
  Request handleOf(uint32_t i) const { return {i, recs_[i].gen}; }

  void addBytes(uint32_t slot, size_t n);
  void complete(uint32_t slot);
  void fail(uint32_t slot, core::Status s);
  // The owner gives the request up: the handle is invalid from here on, the buffer is no longer
  // the transport's (buf becomes nullptr), and the slot is freed when the transport finishes
  // with it (at once if it already finished).
  void cancel(Request r);
  // Frees a cancelled slot the transport has dropped from its queues without finishing it.
  void drop(uint32_t slot);
  // Marks a peer dead: every pending request to/from it fails, and so will later posts.
  void failPeer(int peer, const core::Status& s);
  const core::Status& peerError(int peer) const { return peer_errors_[peer]; }

  // Done or failed; does not release.
  bool finished(Request r) const { return recs_[r.slot].state >= ReqState::kDone; }
  // Returns the request's status and releases the slot.
  core::Status release(Request r);
  // The next request that finished since it was last reported, in finishing order; false when
  // none. Each finish is reported once; a request released meanwhile (wait()) is skipped.
  bool nextFinished(Request* out);
  bool anyFinished() const { return done_head_ != UINT32_MAX; }

  std::string describe(const RequestRecord& rec) const;
  // Deadline message: who waited for whom, for what, how much arrived, when progress last happened.
  core::Status timeoutStatus(const RequestRecord& rec) const;
  int64_t lastProgressNs() const { return last_progress_ns_; }
  int self() const { return self_; }
  uint32_t capacity() const { return static_cast<uint32_t>(recs_.size()); }
  uint32_t inUse() const { return capacity() - static_cast<uint32_t>(free_.size()); }
  uint32_t peakInUse() const { return peak_in_use_; }

 private:
  int self_;
  const char* name_;
  std::vector<RequestRecord> recs_;
  std::vector<uint32_t> free_;
  std::vector<core::Status> peer_errors_;
  uint64_t next_seq_ = 1;
  int64_t last_progress_ns_ = 0;
  uint32_t peak_in_use_ = 0;
  uint32_t done_head_ = UINT32_MAX, done_tail_ = UINT32_MAX;  // the finished list
  void pushFinished(uint32_t slot);
  void freeSlot(uint32_t slot);
};

}  // namespace ccscope::transports
