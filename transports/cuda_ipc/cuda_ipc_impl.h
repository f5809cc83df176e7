// The CUDA-IPC transport's class, shared by its connect/close and its data path files.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "core/host_memory.h"
#include "transports/cuda_ipc/cuda_ipc_control.h"
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
    c.max_inflight_per_peer = kEventsPerPeer;
    // A copy engine moves a small message in a few microseconds; segments below 256 KiB only
    // add announcements and events.
    c.min_segment_bytes = size_t{256} * 1024;
    return c;
  }
  core::Status connect(launch::Bootstrap& bs, core::Deadline deadline) override;
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
};

inline constexpr size_t kCtrlSlotBytes = 128;
// How long deregistering waits for peers to close their mappings (at most; the op timeout
// bounds it where it is shorter).
inline constexpr double kUnmapWaitSeconds = 5;
static_assert(sizeof(Ctrl) <= kCtrlSlotBytes);

}  // namespace ccscope::transports::cuda_ipc
