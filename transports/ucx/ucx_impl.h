// The UCX transport's class, shared by its set-up (ucx_transport.cc) and data path (ucx_data.cc).
#pragma once

#include <ucp/api/ucp.h>

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "transports/ucx/ucx_board.h"
#include "transports/ucx/ucx_transport.h"

namespace ccscope::transports::ucx {

// A UCP tag: bit 63 marks a control message; bits 43-62 the sender's rank; bits 32-42 the
// sender's message number to this peer (a desynchronisation check); bits 0-31 our tag.
inline constexpr uint64_t kCtrlBit = uint64_t{1} << 63;
inline constexpr int kRankShift = 43;
inline constexpr uint64_t kRankMask = ((uint64_t{1} << 20) - 1) << kRankShift;
inline constexpr int kSeqShift = 32;
inline constexpr uint64_t kSeqMask = ((uint64_t{1} << 11) - 1) << kSeqShift;
inline constexpr int kMaxRanks = 1 << 20;

// Control messages (kCtrlBit set): what one side tells the other about the pair.
enum class CtrlKind : uint32_t { kAbort = 1, kMismatch = 2, kTooLong = 3, kHello = 4 };
struct Ctrl {
  CtrlKind kind = CtrlKind::kAbort;
  uint32_t expected = 0;  // mismatch: the receive's tag; too long: the receive's length
  uint32_t got = 0;       // mismatch: the message's tag
  uint32_t pad = 0;
};

class UcxTransport;

// Stored in a slot's UCX request while a post is under way: a callback UCX runs inside the post
// clears it, and then the returned request (already freed) must not be kept.
inline char kPostingMark = 0;
inline void* const kPosting = &kPostingMark;
// The data receives' callback (user_data: the slot's SlotRef).
void recvCb(void* req, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user);

// What a UCX callback gets as user_data: the transport and the request's slot (or the peer).
struct SlotRef {
  UcxTransport* t = nullptr;
  uint32_t slot = 0;
};
struct PeerRef {
  UcxTransport* t = nullptr;
  int peer = -1;
};
struct CtrlOut {  // a control message in flight, freed by its callback
  UcxTransport* t;
  Ctrl c;
};

class UcxTransport final : public Transport {
 public:
  explicit UcxTransport(TransportOptions opts) : opts_(std::move(opts)) {}
  ~UcxTransport() override;
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  const char* name() const override { return "ucx"; }
  Capabilities caps() const override {
    Capabilities c;
    c.memory_kinds = {MemoryKind::kHost};
    c.min_segment_bytes = size_t{256} * 1024;  // UCX's rendezvous threshold is in this range
    return c;
  }
  core::Status connect(launch::Bootstrap& bs, core::Deadline deadline) override;
  core::Status progress() override;
  void abortPeer(int peer, const core::Status& why) override;
  void close() override;
  // UCX_TLS and the transports each endpoint uses ("rank 1: tcp/lo ..."), above the table.
  std::string setupNote() const override;

  // Callbacks (called from ucp_worker_progress on this thread).
  void onSent(uint32_t slot, void* req, ucs_status_t status);
  void onReceived(uint32_t slot, void* req, ucs_status_t status, const ucp_tag_recv_info_t* info);
  void onPeerError(int peer, ucs_status_t status);
  void onControl(void* req, ucs_status_t status, const ucp_tag_recv_info_t* info);
  void onControlSent() { --ctrl_inflight_; }
  bool staleCallback(uint32_t slot, void* req);

 protected:
  void blockFor(int64_t max_ns) override;
  core::Result<MemoryKeys> doRegister(char* base, size_t len, MemoryKind kind, int device) override;
  void doDeregister(const MemoryRegion& mr) override;
  core::Result<Request> doPost(Dir dir, int peer, uint32_t tag, const MemoryRegion& view) override;
  void cancelPending(uint32_t slot) override;

 private:
  struct Peer {
    ucp_ep_h ep = nullptr;
    // Control messages go on an endpoint of their own, so an abort notice is not queued behind
    // a large send on the data endpoint.
    ucp_ep_h ctrl_ep = nullptr;
    uint64_t send_seq = 0;  // messages sent to this peer
    uint64_t recv_seq = 0;  // messages taken from this peer (received or swallowed)
    // Tags of receives given up before a message matched: the next message from this peer
    // is swallowed when it carries the front one, else the front steps aside.
    std::deque<uint32_t> swallow;
    std::deque<uint32_t> held;       // receives not posted to UCX while swallow is not empty
    std::vector<char> scratch;       // a swallowed message lands here
    bool dead = false;               // aborted or desynchronised: every exchange fails (sticky)
    std::array<void*, 2> closing{};  // its endpoints' forced closes, until UCX finishes them
    int64_t close_at_ns = 0;         // dead: the endpoint closes once control notices left, or then
    // Exited or unreachable: what it sent before is still delivered; a receive nothing
    // arrived for fails.
    bool gone = false;
    core::Status gone_why;
  };
  core::Status openContext();
  std::string createBoard(launch::Bootstrap& bs);
  core::Status exchangeAddresses(launch::Bootstrap& bs, core::Deadline deadline);
  core::Status wireUp(core::Deadline deadline);
  core::Status postToUcx(int peer, uint32_t slot);
  void postControlRecv();
  void sendControl(int peer, const Ctrl& c);
  void resolveSwallow(int peer);
  void releaseHeld(int peer);
  void failPeer(int peer, const core::Status& why);
  core::Status abortedBy(int peer) const;
  void readBoard();
  void failPending(int peer, const core::Status& why, bool recvs_only);
  void cancelInUcx(uint32_t slot);
  void closeEndpoint(int peer);
  void* forceClose(ucp_ep_h& ep);
  void collectChosen();
  void drainRequests(double seconds);
  core::Status peerStatus(int peer, ucs_status_t status) const;

  TransportOptions opts_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;
  std::vector<Peer> peers_;
  std::vector<PeerRef> err_args_;
  std::vector<SlotRef> refs_;             // per request slot: the callbacks' user_data
  std::vector<void*> ucx_req_;            // per request slot: the UCX request in flight
  std::vector<ucs_status_t> ucx_status_;  // per request slot: how its last UCX request ended
  // Per receive slot: the sender's message number it matches (receives match in posting order).
  std::vector<uint64_t> expect_seq_;
  Ctrl ctrl_in_{};
  void* ctrl_req_ = nullptr;
  int ctrl_inflight_ = 0;                       // control sends UCX has not finished
  int hellos_ = 0;                              // wire-up hellos received on control endpoints
  AbortBoard board_;                            // ours: same-host peers mark their aborts here
  std::unordered_map<int, AbortBoard> boards_;  // peers on this host with a board: theirs
  std::vector<ucp_mem_h> mapped_;  // live ucp_mem_map handles (unmapped at close at the latest)
  std::string chosen_;
  bool closed_ = false;
  bool ids_at_connect_ = false;  // UCX learns remote endpoint ids at connect (by us or the user)
};

}  // namespace ccscope::transports::ucx
