// The TCP transport's state, shared by its two source files (tcp_transport.cc: connecting,
// posting and moving bytes; tcp_control.cc: failures, cancellation, abort, sleep and close).
// Private to transports/tcp: everyone else uses makeTcpTransport (tcp_transport.h).
#pragma once

#include <sys/epoll.h>
#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "launch/socket_util.h"
#include "transports/tcp/tcp_wire.h"
#include "transports/transport.h"

namespace ccscope::transports::tcp_detail {

constexpr uint32_t kNil = UINT32_MAX;
constexpr int kMaxBatchParts = 32;  // message parts gathered into one sendmsg
constexpr int kMaxEvents = 64;
constexpr size_t kHeaderBytes = sizeof(TcpFrameHeader);

// FIFO of request slots linked through an index array owned by the transport: queuing a
// message never allocates.
struct SlotQueue {
  uint32_t head = kNil;
  uint32_t tail = kNil;
  bool empty() const { return head == kNil; }
};

// One connection of a pair. Sends and receives each have a queue of request slots; only the
// head of each is in flight, so FIFO order per socket is the matching order.
struct Stream {
  launch::Fd fd;
  SlotQueue sendq, recvq;
  size_t sent = 0;       // bytes of the head send part written, header included
  size_t got = 0;        // bytes of the head receive part read, header included
  TcpFrameHeader rx;     // header of the head receive part
  bool matched = false;  // rx was matched to the head receive (onHeader)
  uint32_t armed = 0;    // epoll interest registered now
  bool registered = false;
};

class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(const TransportOptions& opts) : opts_(opts) {
    request_slots_ = opts.request_slots;
  }
  ~TcpTransport() override { close(); }
  const char* name() const override { return "tcp"; }
  Capabilities caps() const override {
    Capabilities c;
    c.min_segment_bytes = 256 << 10;  // two syscalls per message: fewer, larger ones win
    return c;
  }
  core::Status connect(launch::Bootstrap& bootstrap, core::Deadline deadline) override;
  core::Status progress() override;
  void abortPeer(int peer, const core::Status& why) override;
  void close() override;

 protected:
  void blockFor(int64_t max_ns) override;
  core::Result<Request> doPost(Dir dir, int peer, uint32_t tag, const MemoryRegion& v) override;
  void cancelPending(uint32_t slot) override;

 private:
  Stream& stream(int peer, int s) { return streams_[peer * nstreams_ + s]; }
  uint32_t& link(int s, uint32_t slot) { return next_[s * table_->capacity() + slot]; }
  void push(SlotQueue& q, int s, uint32_t slot);
  void pop(SlotQueue& q, int s);
  // Unlinks `slot` from a queue; false if it is not there.
  bool unlink(SlotQueue& q, int s, uint32_t slot);
  // The next receive of stream 0 a header matches, dropping cancelled ones that step aside.
  uint32_t matchingRecv(int peer, uint32_t tag);
  // Where a receive's next bytes go: its buffer, or the discard buffer once it was cancelled.
  char* recvTarget(uint32_t slot, size_t off, size_t& want);
  bool hasWork(int peer);
  void progressPeer(int peer);
  bool pumpSend(int peer, int s);  // each pump returns false once the peer has failed
  void consumeSent(int peer, int s, size_t n);
  bool pumpRecv(int peer, int s);
  bool recvFailed(int peer, ssize_t n);
  bool onHeader(int peer, int s, uint32_t slot);
  void finishPart(uint32_t slot);
  core::Status closedStatus(int peer, const char* call, int err);
  void failPeer(int peer, const core::Status& st, const TcpFrameHeader* notify);
  void rearm();

  TransportOptions opts_;
  int nstreams_ = 1;
  launch::Fd epoll_;
  std::vector<Stream> streams_;    // [peer * streams + stream]
  std::vector<uint32_t> next_;     // [stream * capacity + slot]: links of the SlotQueues
  std::vector<uint64_t> msg_len_;  // [slot]: length the sender announced for a receive
  std::vector<int> active_;        // peers with queued work
  std::vector<uint8_t> is_active_, dead_;
  std::vector<char> discard_;  // where cancelled receives' bytes go
  TcpFrameHeader tx_hdrs_[kMaxBatchParts];
  epoll_event events_[kMaxEvents];
};

}  // namespace ccscope::transports::tcp_detail
