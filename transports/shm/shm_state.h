// The shared-memory transport's state, shared by its two source files (shm_transport.cc:
// connecting, posting and moving bytes; shm_control.cc: peer liveness, sleep, cancellation,
// abort and close). Private to transports/shm: everyone else uses makeShmTransport.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "launch/socket_util.h"
#include "transports/common/fixed_queue.h"
#include "transports/shm/shm_segment.h"
#include "transports/transport.h"

namespace ccscope::transports::shm_detail {

using shm::Ring;
using shm::Segment;
using shm::Slot;

// The same words on both sides of a mismatched message (or of an abort).
core::Status mismatchStatus(int receiver, int sender, const shm::Ring& ring);

struct Peer {
  Segment seg;  // the peer's segment: we publish into seg.ring(self)
  pid_t pid = -1;
  launch::Fd pidfd;
  FixedQueue sends, remote_inflight, recvs;
  uint64_t send_off = 0;  // bytes of sends.front() already published
  uint64_t head = 0;      // next position of the ring we publish into
  // The tail of that ring as last read. The tail is the receiver's cache line: it is read again
  // only when the ring looks full or single-copy sends wait for it, so a small send does not
  // first wait for that line to cross cores.
  uint64_t peer_tail = 0;
  uint64_t tail = 0;  // our cached tail of the ring we consume (peer -> self)
  bool recv_started = false;
  bool gone = false;  // exited; its ring may still hold messages for us (checkPeers)
};

class ShmTransport final : public Transport {
 public:
  explicit ShmTransport(const TransportOptions& o) : opts_(o) { request_slots_ = o.request_slots; }
  ~ShmTransport() override { close(); }
  const char* name() const override { return "shm"; }
  Capabilities caps() const override { return Capabilities{}; }
  core::Status connect(launch::Bootstrap& bs, core::Deadline deadline) override;
  core::Status progress() override;
  void abortPeer(int peer, const core::Status& why) override;
  void close() override;

 protected:
  void blockFor(int64_t max_ns) override;
  core::Result<Request> doPost(Dir dir, int peer, uint32_t tag, const MemoryRegion& v) override {
    CCSCOPE_ASSIGN_OR_RETURN(Request r, table_->open(dir, peer, tag, v.base(), v.len()));
    if (dir == Dir::kRecv) {
      peers_[peer].recvs.push(r.slot);
      return r;
    }
    peers_[peer].sends.push(r.slot);
    progressSends(peer);
    return r;
  }
  void cancelPending(uint32_t slot) override;

 private:
  void progressSends(int p);
  // The next slot of the head send: its next inline chunk, or its address for single copy.
  void fillSlot(Peer& peer, uint32_t slot, Slot& s);
  void progressRecvs(int p);
  // Matches the head receive against the message in `s`; false when the peer failed.
  bool matchHead(int p, Slot& s);
  bool readRemote(int p, char* dst, uint64_t addr, uint64_t len);
  void checkPeers();
  void failSends(int p);  // of a peer that exited: they can never complete
  core::Status exitedStatus(int p) const {
    return core::Status(core::Code::kPeerClosed,
                        fmt::format("rank {} (pid {}) exited or was killed", p, peers_[p].pid))
        .withLayer(core::Layer::kApplication);
  }
  void failPeer(int p, core::Status s) {
    ++events_;
    table_->failPeer(p, s.withPeer(p));
    Peer& peer = peers_[p];
    peer.sends.clear();
    peer.recvs.clear();
    peer.remote_inflight.clear();
    peer.send_off = 0;
    peer.recv_started = false;
  }
  core::Status probeSingleCopy(int p, uint64_t remote_header);

  TransportOptions opts_;
  Segment own_;
  std::vector<Peer> peers_;
  std::vector<uint64_t> remote_seq_;  // per request slot: ring position of a single-copy send
  uint32_t seen_doorbell_ = 0;
  uint64_t events_ = 0;  // slots published, consumed or completed, peers failed: progress made
  bool single_copy_ = true;
  size_t single_copy_from_ = 0;  // set by connect()
  std::vector<char> discard_;    // where a cancelled receive's single-copy message is read
  int64_t next_liveness_check_ns_ = 0;
};

}  // namespace ccscope::transports::shm_detail
