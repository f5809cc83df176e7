// The control messages of the CUDA-IPC transport (fixed size, over its shm channel).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ccscope::transports::cuda_ipc {

enum class CtrlKind : uint32_t {
  kAnnounce = 1,  // sender -> receiver: message `seq` is in this allocation at this offset
  kDone = 2,      // receiver -> sender: `seq` was copied out (its copy ran), or why not
  kAbort = 3,     // either way: stop every exchange with me
  kUnmap = 4,     // owner -> peers: close your mapping of allocation `mem` (it is being freed)
  kUnmapped = 5,  // peer -> owner: closed (or never opened)
  kClosed = 6,    // either way: my transport closed (no more answers from me)
};

// What a kDone says about the message.
enum class CtrlResult : uint32_t { kCopied = 0, kDiscarded = 1, kTagMismatch = 2, kTooLong = 3 };

struct Ctrl {
  CtrlKind kind = CtrlKind::kAnnounce;
  CtrlResult result = CtrlResult::kCopied;
  uint32_t tag = 0;     // announce: the send's tag; done: the receive's tag
  uint64_t seq = 0;     // per (sender, receiver) message number
  uint64_t len = 0;     // announce: bytes sent; done: bytes the receive had room for
  uint64_t offset = 0;  // announce: the buffer's offset inside its allocation
  cudaIpcMemHandle_t mem{};
};

inline constexpr uint32_t kCtrlTag = 0x5a;
// Copies in flight per peer: each holds one of the receiver's own events until it ran.
inline constexpr uint32_t kEventsPerPeer = 64;
// Control receives kept posted per peer, and control sends in flight per peer.
inline constexpr uint32_t kCtrlRecvsPerPeer = 16;
inline constexpr uint32_t kCtrlSendsPerPeer = 64;

}  // namespace ccscope::transports::cuda_ipc
