// The verbs transport's class, shared by its setup (verbs_transport.cc), data path
// (verbs_data.cc) and ring/control path (verbs_ring.cc). Private to transports/verbs.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/host_memory.h"
#include "transports/verbs/verbs_device.h"
#include "transports/verbs/verbs_ops.h"
#include "transports/verbs/verbs_wire.h"

namespace ccscope::transports::verbs {

// What a work request is, packed into its wr_id with the peer and an index.
enum class WrKind : uint64_t { kRecv = 1, kStage = 2, kWrite = 3 };

struct Arrival {  // an eager message or rendezvous announcement not matched yet
  WireHeader h;
  uint32_t ring;  // the receive slot holding it (reposted once consumed)
};

struct Peer {
  ibv_qp* qp = nullptr;
  std::unique_ptr<QpStateMachine> sm;
  // Sending: FIFO of requests not fully issued; the head may wait for credits or an advert.
  std::deque<uint32_t> sends;
  bool head_rts_sent = false;
  uint64_t head_seq = 0;
  uint64_t send_seq = 0;
  std::deque<WireHeader> adverts;  // from the peer, in its receive order
  std::vector<uint32_t> free_stage;
  uint32_t credits = kRingSlots;  // receive slots free at the peer
  std::deque<WireHeader> ctrl_out;
  // Receiving: unmatched receives and arrivals (matched in order), matched rendezvous receives
  // waiting for their write.
  std::deque<uint32_t> recvs;
  std::deque<Arrival> arrivals;
  std::deque<uint32_t> awaiting;
  uint64_t recv_seq = 0;   // message number the next arrival carries
  uint32_t owed = 0;       // reposted slots not yet returned as credits
  uint32_t owed_ctrl = 0;  // of which freed by credit messages (never returned on their own)
  bool dead = false;
};

struct AsyncNote {
  ibv_event_type type;
  uint32_t qp_num;
};

class VerbsTransport final : public Transport {
 public:
  VerbsTransport(TransportOptions opts, const VerbsOps& ops) : opts_(std::move(opts)), ops_(ops) {
    request_slots_ = opts_.request_slots;
  }
  ~VerbsTransport() override { close(); }
  VerbsTransport(const VerbsTransport&) = delete;
  VerbsTransport& operator=(const VerbsTransport&) = delete;

  const char* name() const override { return "verbs"; }
  Capabilities caps() const override {
    Capabilities c;
    c.memory_kinds = {MemoryKind::kHost, MemoryKind::kHostPinned};
    c.max_inflight_per_peer = kRingSlots - kCtrlReserve;
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
  // Setup (verbs_transport.cc).
  core::Status createResources();
  core::Status createQp(int peer);
  core::Status exchangeAddresses(launch::Bootstrap& bs, core::Deadline deadline);
  void asyncLoop();
  void drainAsync();
  void releaseResources();
  // Ring and control (verbs_ring.cc).
  char* recvSlot(int peer, uint32_t i);
  char* stageSlot(int peer, uint32_t i);
  core::Status postRing(int peer, uint32_t i);
  bool sendStaged(int peer, const WireHeader& h, const char* payload, size_t len, bool data);
  void sendControl(int peer, WireHeader h);
  void flushControl(int peer);
  void returnCredits(int peer, bool idle);
  int drainCq();
  void onCompletion(const ibv_wc& wc);
  void onRing(int peer, uint32_t ring, const ibv_wc& wc);
  void onHeader(int peer, uint32_t ring, const WireHeader& h);
  void onNack(int peer, const WireHeader& h);
  void failPeer(int peer, const core::Status& why);
  // Lets the staged sends to `peer` (a refusal, an abort) leave before its QP goes to ERR.
  void failPeerAfterNotice(int peer, const core::Status& why);
  void repost(int peer, uint32_t ring, bool credit_msg);
  // Data path (verbs_data.cc).
  void issueSends(int peer);
  bool issueEager(int peer, uint32_t slot);
  bool issueRendezvous(int peer, uint32_t slot);
  void matchPeer(int peer);
  void matchOne(int peer, uint32_t slot, const Arrival& a);
  void advertise(int peer, uint32_t slot, uint64_t seq);
  void advertiseReady(int peer);
  void onWriteArrived(int peer, uint32_t ring, const ibv_wc& wc);

  TransportOptions opts_;
  const VerbsOps& ops_;
  OpenDevice dev_;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_mr* ring_mr_ = nullptr;
  core::HostBuffer ring_mem_;
  std::vector<Peer> peers_;
  std::vector<uint8_t> advertised_;  // [request slot]: an advert for it left
  std::vector<uint64_t> seq_of_;     // [request slot]: its message number once known
  std::vector<uint32_t> lkey_of_;    // [request slot]: the posted view's keys
  std::vector<uint32_t> rkey_of_;
  std::vector<ibv_mr*> mrs_;  // user registrations, released at close
  std::vector<ibv_wc> wcs_;
  // The async-event thread hands notes over here; progress() applies them.
  std::mutex async_mu_;
  std::vector<AsyncNote> async_notes_;
  std::atomic<bool> async_pending_{false};
  std::atomic<bool> stop_{false};
  std::thread async_thread_;
  int wake_fd_ = -1;
  bool armed_ = false;
  bool closed_ = false;
};

inline uint64_t wrId(WrKind k, int peer, uint32_t index) {
  return static_cast<uint64_t>(k) << 60 | static_cast<uint64_t>(peer) << 32 | index;
}
inline WrKind wrKind(uint64_t id) { return static_cast<WrKind>(id >> 60); }
inline int wrPeer(uint64_t id) { return static_cast<int>((id >> 32) & 0xfffffff); }
inline uint32_t wrIndex(uint64_t id) { return static_cast<uint32_t>(id); }

}  // namespace ccscope::transports::verbs
