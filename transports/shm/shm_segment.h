// Layout of a rank's shared-memory segment and the RAII mapping of it. Segment of rank r holds
// one inbound ring per source rank s (s -> r) and r's futex doorbell. Senders publish slots
// (each slot's seq), the owner consumes them (tail); both ring the other side's doorbell.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace ccscope::transports::shm {

inline constexpr uint32_t kSegMagic = 0x4343534d;  // "CCSM"
inline constexpr uint32_t kSlots = 64;
inline constexpr uint32_t kSlotBytes = 8192;

enum SlotKind : uint32_t { kInline = 1, kRemote = 2 };

struct alignas(64) Slot {
  // Ring position + 1 once the sender has written the slot (publish()). The receiver polls
  // this word, in the same cache line as the header and a small message's first 24 bytes, so
  // a message crosses between cores as one line, not a ring index and then the slot. A plain
  // word under std::atomic_ref: an std::atomic member would be written by the Ring's
  // constructor and fault in every slot's page at setup.
  uint64_t seq;
  uint32_t tag;
  uint32_t kind;
  uint64_t msg_len;    // whole message
  uint64_t chunk_len;  // bytes in this slot (inline) or the whole message (remote)
  uint64_t addr;       // remote: the sender's virtual address for process_vm_readv
  char data[kSlotBytes];
};

// kAborted: the owner ended every exchange with the sender (Transport::abortPeer).
enum FaultKind : uint32_t { kNoFault = 0, kTagMismatch = 1, kTooLong = 2, kAborted = 3 };

// A slot's data bytes in the cache line of its seq.
inline constexpr size_t kFirstLineData = 64 - offsetof(Slot, data);
static_assert(offsetof(Slot, data) < 64 && offsetof(Slot, seq) < 64);

// Whether the slot at ring position `pos` holds the message published there.
inline bool published(Slot& s, uint64_t pos) {
  return std::atomic_ref<uint64_t>(s.seq).load(std::memory_order_acquire) == pos + 1;
}
// Hands the slot at `pos`, fully written, to the receiver.
inline void publish(Slot& s, uint64_t pos) {
  std::atomic_ref<uint64_t>(s.seq).store(pos + 1, std::memory_order_release);
}

struct alignas(64) Ring {
  alignas(64) std::atomic<uint64_t> tail;  // slots consumed by the owner
  // Set by the owner when the sender's message did not match the posted receive, so the
  // sender fails too instead of waiting for a reply that will never come.
  alignas(64) std::atomic<uint32_t> fault;
  uint64_t fault_expected, fault_got;
  Slot slots[kSlots];
};

struct alignas(64) SegmentHeader {
  uint32_t magic;
  uint32_t nranks;
  int32_t pid;
  uint32_t probe;  // a known value peers read with process_vm_readv to test single-copy
  alignas(64) std::atomic<uint32_t> doorbell;
  std::atomic<uint32_t> sleeping;
};

size_t segmentBytes(int nranks);
// Whether every local rank's segment, allocated in full, takes at most half of what /dev/shm
// has free: prefault() allocates what would otherwise be allocated only as rings are used
// (a container's /dev/shm can be 64 MiB; 16 ranks' segments are 135 MiB).
bool prefaultFits(int nranks);

// A mapped segment; the creator unlinks the name once every peer mapped it.
class Segment {
 public:
  Segment() = default;
  Segment(Segment&& o) noexcept { *this = std::move(o); }
  Segment& operator=(Segment&& o) noexcept;
  ~Segment();
  static core::Result<Segment> create(const std::string& name, int nranks);
  static core::Result<Segment> open(const std::string& name, int nranks);
  void unlinkName();

  SegmentHeader* header() const { return reinterpret_cast<SegmentHeader*>(base_); }
  Ring* ring(int src) const { return reinterpret_cast<Ring*>(base_ + sizeof(SegmentHeader)) + src; }
  // Wakes the owner if it sleeps on the doorbell. The doorbell only counts while the owner is
  // (about to be) asleep: an owner that is awake re-polls its rings after announcing sleep
  // (ShmTransport::blockFor), so a ring it misses here it finds there (Dekker on `sleeping` and
  // the ring indices, both sides with a seq_cst fence). `force` always counts (faults).
  void ring_doorbell(bool force = false) const;
  // Maps ring `src`'s pages (all of them with src -1) into this process now, writable, and
  // allocates them in /dev/shm: the setup path takes the page faults, not the first messages.
  // A 4 KiB message is the first to reach a slot's second page: faulting it in then would
  // make the first 4 KiB messages of a process (--algo auto's anchor) look 2-4x slower. False
  // where the kernel cannot (before 5.14, MADV_POPULATE_WRITE) or /dev/shm is full: the pages
  // are then faulted in as they are used.
  bool prefault(int src = -1) const;

 private:
  char* base_ = nullptr;
  size_t len_ = 0;
  std::string name_;
  bool owner_ = false;
};

}  // namespace ccscope::transports::shm
