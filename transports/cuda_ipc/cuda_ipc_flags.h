// The stream path's flags: one shared host segment per rank, mapped by every rank of the node
// and registered with CUDA in each, so that streams write and wait on its words
// (cuStreamWriteValue32 / cuStreamWaitValue32) and hosts read them without a device call.
// Rank r's segment holds one PairOut per peer p: everything about the messages r sends p.
//
// Message m (0-based, per ordered pair) moves so (read mode, as the host path):
//   sender host:   ring[m % kRing] = {its buffer's IPC handle, offset, len, tag}; posted = m + 1
//   sender stream: ready = m + 1           (the source is ready in stream order)
//   receiver host: waits posted > m, reads the descriptor, checks tag and length; taken = m + 1
//   receiver stream: wait ready >= m + 1; copy out of the mapped source; done = m + 1
//   sender stream: wait done >= m + 1      (later stream work may overwrite the source)
// Counters compare cyclically (CU_STREAM_WAIT_VALUE_GEQ: (int32_t)(*addr - v) >= 0).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace ccscope::transports::cuda_ipc {

// Descriptors a sender may publish ahead of its receiver's host.
inline constexpr uint32_t kRing = 1024;

struct Desc {
  cudaIpcMemHandle_t mem{};
  uint64_t offset = 0;
  uint64_t len = 0;
  uint32_t tag = 0;
  uint32_t has_mem = 0;  // 0: a zero-length message without a buffer
};

// Each word on a cache line of its own: two GPUs' and two hosts' writers never share one.
struct PairOut {
  alignas(64) uint32_t ready;   // sender's stream
  alignas(64) uint32_t done;    // receiver's stream
  alignas(64) uint32_t posted;  // sender's host
  alignas(64) uint32_t taken;   // receiver's host
  alignas(64) uint32_t abort;   // either host: an AbortWord once either side gave the pair up
  // The receiver's host, before it aborts the pair over a message it refuses: a Reject, with
  // the tag it expected or the bytes it had room for.
  alignas(64) uint32_t reject;
  uint32_t reject_tag;
  uint64_t reject_len;
  alignas(64) Desc ring[kRing];
};

enum AbortWord : uint32_t { kPairLive = 0, kPairAborted = 1, kPairClosed = 2 };
enum Reject : uint32_t { kNoReject = 0, kRejectTag = 1, kRejectLength = 2 };

// True when a (cyclic) counter has reached `v`.
inline bool reached(uint32_t counter, uint32_t v) { return static_cast<int32_t>(counter - v) >= 0; }
inline uint32_t loadWord(uint32_t& w) {
  return std::atomic_ref<uint32_t>(w).load(std::memory_order_acquire);
}
inline void storeWord(uint32_t& w, uint32_t v) {
  std::atomic_ref<uint32_t>(w).store(v, std::memory_order_release);
}

// A rank's flag segment: created by its owner, opened by the node's other ranks.
class FlagSegment {
 public:
  FlagSegment() = default;
  FlagSegment(FlagSegment&& o) noexcept { *this = std::move(o); }
  FlagSegment& operator=(FlagSegment&& o) noexcept;
  FlagSegment(const FlagSegment&) = delete;
  FlagSegment& operator=(const FlagSegment&) = delete;
  ~FlagSegment() { release(); }

  static size_t bytesFor(int nranks);
  // Pages allocated now: a full /dev/shm fails here, not later with SIGBUS.
  static core::Result<FlagSegment> create(const std::string& name, int nranks);
  static core::Result<FlagSegment> open(const std::string& name, int nranks);

  char* base() const { return base_; }
  size_t bytes() const { return len_; }
  PairOut& pair(int peer) const { return reinterpret_cast<PairOut*>(base_)[peer]; }
  void unlinkName();  // the owner, once every peer mapped it

 private:
  void release();
  char* base_ = nullptr;
  size_t len_ = 0;
  std::string name_;
  bool owner_ = false;
};

}  // namespace ccscope::transports::cuda_ipc
