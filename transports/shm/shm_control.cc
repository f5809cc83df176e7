#include <fmt/format.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "transports/shm/shm_state.h"

namespace ccscope::transports::shm_detail {

using core::Code;
using core::Layer;
using core::Status;
using namespace shm;

namespace {
constexpr int64_t kLivenessCheckEveryNs = 50'000'000;
}  // namespace

Status mismatchStatus(int receiver, int sender, const Ring& ring) {
  if (ring.fault.load() == kAborted)
    return Status(Code::kAborted,
                  fmt::format("rank {} aborted its exchanges with rank {}", receiver, sender))
        .withLayer(Layer::kApplication);
  std::string what =
      ring.fault.load() == kTagMismatch
          ? fmt::format(
                "rank {} expected tag {:#x} from rank {} but got {:#x}: ranks disagree on "
                "the collective",
                receiver, ring.fault_expected, sender, ring.fault_got)
          : fmt::format(
                "rank {} sent {} B but rank {} expected at most {} B: ranks disagree on "
                "the message size",
                sender, ring.fault_got, receiver, ring.fault_expected);
  return Status(Code::kRemoteError, what).withLayer(Layer::kApplication);
}

void ShmTransport::checkPeers() {
  for (int p = 0; p < size_; ++p) {
    Peer& peer = peers_[p];
    if (p == rank_ || !table_->peerError(p).isOk()) continue;
    bool gone = false;
    if (peer.pidfd.valid()) {
      pollfd pf{peer.pidfd.get(), POLLIN, 0};
      gone = ::poll(&pf, 1, 0) > 0;
    } else {
      gone = kill(peer.pid, 0) != 0 && errno == ESRCH;
    }
    if (!gone) continue;
    // What a peer published before it exited is still in our ring and is still delivered: a
    // rank may finish its last collective and exit before we consume its last message. Only
    // what can never come fails: its part of our sends at once, our receives once the ring is
    // drained (and then every later post to it, through failPeer).
    progressRecvs(p);
    if (!table_->peerError(p).isOk()) continue;  // the drain itself failed the peer
    if (!shm::published(own_.ring(p)->slots[peer.tail % kSlots], peer.tail)) {
      failPeer(p, exitedStatus(p));
      continue;
    }
    if (peer.gone) continue;  // its sends failed at the check that found it gone
    peer.gone = true;
    failSends(p);
  }
}

void ShmTransport::failSends(int p) {
  Peer& peer = peers_[p];
  const Status closed = exitedStatus(p).withPeer(p);
  for (FixedQueue* q : {&peer.sends, &peer.remote_inflight})
    while (!q->empty()) {
      table_->fail(q->front(), closed);
      q->pop();
      ++events_;
    }
  peer.send_off = 0;
}

void ShmTransport::blockFor(int64_t max_ns) {
  if (!connected()) return;
  const uint64_t before = events_;  // the liveness check below may finish what is waited on
  int64_t now = core::nowNs();
  if (now >= next_liveness_check_ns_) {
    checkPeers();
    next_liveness_check_ns_ = now + kLivenessCheckEveryNs;
  }
  max_ns = std::min(max_ns, kLivenessCheckEveryNs);
  SegmentHeader* h = own_.header();
  h->sleeping.store(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Peers ring the doorbell only while `sleeping` is set: one more poll catches whatever they
  // published before they could see it (and reloads seen_doorbell_ for the futex).
  progress().ignore();
  if (events_ == before) {
    timespec ts{static_cast<time_t>(max_ns / 1000000000), static_cast<long>(max_ns % 1000000000)};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&h->doorbell), FUTEX_WAIT, seen_doorbell_, &ts,
            nullptr, 0);
  }
  h->sleeping.store(0, std::memory_order_relaxed);
}

void ShmTransport::cancelPending(uint32_t slot) {
  const RequestRecord& rec = table_->slot(slot);
  Peer& peer = peers_[rec.peer];
  if (rec.dir == Dir::kRecv) return;  // stays in order as a sink: progressRecvs/matchHead
  // A send: not started yet, progressSends drops it when it reaches the front. Part of it
  // published (inline chunks, or a single-copy send the peer may be reading): the peer's stream
  // cannot be resynchronised without it.
  bool started = false;
  if (!peer.sends.empty() && peer.sends.front() == slot) started = peer.send_off > 0;
  for (uint32_t i = 0; i < peer.remote_inflight.size(); ++i)
    started |= peer.remote_inflight.at(i) == slot;
  if (started)
    abortPeer(rec.peer, Status(Code::kAborted, fmt::format("rank {} cancelled a send to rank {} "
                                                           "that had partly left",
                                                           rank_, rec.peer)));
}

void ShmTransport::abortPeer(int p, const Status& why) {
  if (!connected() || p < 0 || p >= size_ || p == rank_ || !table_->peerError(p).isOk()) return;
  // The peer sees the fault on the ring it publishes into (ours) and fails its side too.
  Ring* in = own_.ring(p);
  in->fault.store(kAborted, std::memory_order_release);
  peers_[p].seg.ring_doorbell(/*force=*/true);
  failPeer(p, Status(Code::kAborted, why.message()).withLayer(Layer::kApplication));
}

void ShmTransport::close() {
  if (connected()) {
    const Status closed(Code::kAborted, "shm transport closed");
    for (int p = 0; p < size_; ++p)
      if (p != rank_ && table_->peerError(p).isOk()) failPeer(p, closed);
  }
  setConnected(false);
  peers_.clear();
  own_ = Segment();
}

}  // namespace ccscope::transports::shm_detail
