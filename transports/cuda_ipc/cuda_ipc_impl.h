// The CUDA-IPC transport's class, shared by its connect/close and its data path files.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/host_memory.h"
#include "transports/cuda_ipc/cuda_ipc_control.h"
#include "transports/cuda_ipc/cuda_ipc_flags.h"
#include "transports/cuda_ipc/cuda_ipc_ops.h"
#include "transports/cuda_ipc/cuda_ipc_transport.h"

namespace ccscope::transports::cuda_ipc {

// What registering device memory learned once: the allocation's IPC handle and base.
struct ExportedRange {
  cudaIpcMemHandle_t handle{};
  const char* alloc_base = nullptr;
};

class CudaIpcTransport final : public Transport {
 public:
  CudaIpcTransport(TransportOptions opts, const CudaIpcOps& ops)
      : opts_(std::move(opts)), ops_(ops) {}
  ~CudaIpcTransport() override { close(); }
  CudaIpcTransport(const CudaIpcTransport&) = delete;
  CudaIpcTransport& operator=(const CudaIpcTransport&) = delete;

  const char* name() const override { return "cuda-ipc"; }
  Capabilities caps() const override {
    Capabilities c;
    c.memory_kinds = {MemoryKind::kCuda};
    c.max_inflight_per_peer = stream_path_ ? kRing / 2 : kEventsPerPeer;
    c.stream_ordered = stream_path_;
    // A copy engine moves a small message in a few microseconds; segments below 256 KiB only
    // add announcements and events.
    c.min_segment_bytes = size_t{256} * 1024;
    return c;
  }
  std::string setupNote() const override { return path_note_; }
  core::Status connect(launch::Bootstrap& bs, core::Deadline deadline) override;
  void beginBatch() override { in_batch_ = stream_path_; }
  core::Status endBatch() override;
  core::Status progress() override;
  void abortPeer(int peer, const core::Status& why) override;
  void close() override;

 protected:
  void blockFor(int64_t max_ns) override;
  core::Result<MemoryKeys> doRegister(char* base, size_t len, MemoryKind kind, int device) override;
  void doDeregister(const MemoryRegion& mr) override;
  core::Result<Request> doPost(Dir dir, int peer, uint32_t tag, const MemoryRegion& view) override;
  void cancelPending(uint32_t slot) override;

 private:
  static constexpr uint32_t kNoSlot = ~0u;
  static constexpr uint32_t kNoEvent = ~0u;
  // The stream path's post, until its work is enqueued.
  struct Pending {
    Dir dir;
    int peer;
    uint32_t slot;
    uint32_t msg;  // the pair's message number
    uint32_t gen;  // the request's, while its slot may be reused
  };
  // A matched announcement: the answer its sender gets once the copy (if any) ran.
  struct Copy {
    uint32_t slot;   // the receive being copied into; kNoSlot: it already finished
    uint32_t event;  // ours, recorded after the copy; kNoEvent: nothing to wait for
    Ctrl done;
  };
  struct Peer {
    std::deque<uint32_t> sends;  // announced, waiting for the receiver's kDone
    std::deque<uint32_t> recvs;  // posted, not matched yet
    std::deque<Ctrl> announces;  // arrived, not matched yet
    std::deque<Copy> copies;     // matched, answered in message order once each copy ran
    uint64_t send_seq = 0, recv_seq = 0;
    cudaStream_t stream = nullptr;
    std::vector<cudaEvent_t> events;  // ours (this process only): a copy's completion
    std::vector<uint32_t> free_events;
    std::map<std::array<char, sizeof(cudaIpcMemHandle_t)>, char*> opened;
    std::deque<Ctrl> ctrl_out;        // waiting for a free control send buffer
    std::vector<Request> ctrl_sends;  // per control send buffer (invalid: free)
    uint64_t done_seq = 0;            // the kDone expected next
    uint32_t unmaps_unanswered = 0;   // our kUnmaps this peer has not answered
    // The stream path's posts outside a batch: receives whose sender's host has not announced
    // them yet, and sends that finish when the receiver's "done" reached them (host polls).
    std::deque<Pending> deferred;
    std::deque<Pending> host_sends;
    bool dead = false;
    bool silent = false;  // let an unmap wait expire; cleared by its next control message
  };
  core::Status connectControl(launch::Bootstrap& bs, core::Deadline deadline);
  core::Status createStreams();
  core::Status postControlRecv(int peer, uint32_t index);
  void sendControl(int peer, const Ctrl& c);
  void flushControl(int peer);
  core::Status reapControl();
  void onControl(int peer, const Ctrl& c);
  void onDone(int peer, const Ctrl& c);
  void matchPeer(int peer);
  void matchOne(int peer, uint32_t slot, const Ctrl& a);
  void pollPeer(int peer);
  void waitForUnmaps();
  void sayClosed();
  core::Result<char*> openPeerMemory(int peer, const cudaIpcMemHandle_t& h);
  void onUnmap(int peer, const Ctrl& c);
  void failPeer(int peer, const core::Status& why);
  char* ctrlBuf(int peer, bool recv, uint32_t index);
  // A CUDA error as Status, in CUDA's own words (through the table).
  core::Status cudaErr(const char* call, cudaError_t e, int peer = -1) const;
  // Waits for this rank's copies out of `p`'s memory (before closing a mapping of it).
  void syncCopies(int p);

  // The stream path (cuda_ipc_stream.cc): posts become stream work on the rank's stream,
  // signalled through the flag segments; no host round trip per message.
  struct Enqueued {  // a flushed batch: its requests finish when its event ran
    uint32_t event;
    std::vector<Pending> reqs;
  };
  std::string streamPathRefusal() const;
  core::Status choosePath(launch::Bootstrap& bs, core::Deadline deadline);
  core::Status connectStream(launch::Bootstrap& bs, core::Deadline deadline);
  core::Result<Request> streamPost(Dir dir, int peer, uint32_t tag, const MemoryRegion& view);
  core::Status publish(int p, uint32_t msg, uint32_t tag, const MemoryRegion& view);
  template <class Ready>
  core::Status hostWait(int p, Ready&& ready, const char* what, uint32_t msg);
  core::Status flushBatch();
  core::Status enqueueRecv(const Pending& r);
  core::Status sendFlag(const Pending& x, bool wait);
  core::Status recordFor(std::vector<Pending> reqs);
  void completeByFlags(int p);
  void startDeferred(int p, bool block);
  void pollHostSends(int p);
  core::Result<uint32_t> batchEvent();
  void pollBatches();
  void checkAborts();
  core::Status rejectStatus(int p);
  void releaseWaits(int p, uint32_t why);
  void drainStream(double seconds);
  void closeStream();
  char* devWord(int owner, const uint32_t& word) const;
  PairOut& outPair(int p) const { return flags_[rank_].pair(p); }  // this rank -> p
  PairOut& inPair(int p) const { return flags_[p].pair(rank_); }   // p -> this rank

  TransportOptions opts_;
  const CudaIpcOps& ops_;
  std::unique_ptr<Transport> ctrl_;  // shm: announcements and answers
  core::HostBuffer ctrl_mem_;
  Registration ctrl_reg_;
  // Control request slot -> (peer << 16 | recv << 15 | index); -1: not ours.
  std::vector<int64_t> ctrl_owner_;
  std::vector<Peer> peers_;
  std::vector<std::unique_ptr<ExportedRange>> exported_;
  int device_ = -1;
  bool closed_ = false;
  bool stream_path_ = false;
  bool in_batch_ = false;
  std::string path_note_;
  cudaStream_t rank_stream_ = nullptr;
  std::vector<FlagSegment> flags_;  // by rank: this rank's own, and each peer's
  std::vector<char*> flags_dev_;    // their device addresses (nullptr: not registered)
  std::vector<Pending> batch_;
  std::deque<Enqueued> enqueued_;
  std::vector<cudaEvent_t> batch_events_;
  std::vector<uint32_t> free_batch_events_;
};

inline constexpr size_t kCtrlSlotBytes = 128;
// How long a failed peer's release waits for the rank's stream to drain.
inline constexpr double kDrainSeconds = 2;
// The stream path's bound on a host wait for a peer's host (no op timeout given).
inline constexpr double kHostWaitSeconds = 300;
// How long deregistering waits for peers to close their mappings (at most; the op timeout
// bounds it where it is shorter).
inline constexpr double kUnmapWaitSeconds = 5;
static_assert(sizeof(Ctrl) <= kCtrlSlotBytes);

}  // namespace ccscope::transports::cuda_ipc
